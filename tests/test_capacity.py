"""docs/capacity.md is what the bench's results and the price table give, and a price is
one edit away from every figure that depends on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import capacity

pytestmark = pytest.mark.pure


def test_docs_capacity_is_what_the_current_results_and_prices_give() -> None:
    assert capacity.TARGET.read_text(encoding="utf-8") == capacity.render(), (
        "docs/capacity.md is stale: run `evidencia capacity` (make capacity)"
    )
    assert capacity.write(check=True) == 0


def test_the_check_fails_when_the_bench_results_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = json.loads(capacity.RESULTS.read_text(encoding="utf-8"))
    results["job_costs"]["research_run"]["reads"] += 1_000
    changed = tmp_path / "results.json"
    changed.write_text(json.dumps(results), encoding="utf-8")
    monkeypatch.setattr(capacity, "RESULTS", changed)
    assert capacity.write(check=True) == 1


def test_a_doubled_gemini_price_doubles_the_gemini_cost_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    costs = capacity.Costs(
        json.loads(capacity.RESULTS.read_text(encoding="utf-8")),
        json.loads(capacity.PRICES.read_text(encoding="utf-8")),
    )
    before = capacity.scale_of(costs, 10)
    prices = json.loads(capacity.PRICES.read_text(encoding="utf-8"))
    for model in set(costs.results["tokens"]["models"].values()):
        for kind in ("input", "cached_input", "output"):
            prices["models"][model][kind] *= 2
    doubled = tmp_path / "prices.json"
    doubled.write_text(json.dumps(prices), encoding="utf-8")
    monkeypatch.setattr(capacity, "PRICES", doubled)
    after = capacity.scale_of(capacity.Costs(costs.results, prices), 10)
    assert after.gemini_usd == pytest.approx(2 * before.gemini_usd, rel=1e-3)
    assert (after.cloud_run_usd, after.firestore_usd) == (
        before.cloud_run_usd,
        before.firestore_usd,
    )
    assert capacity.write(check=True) == 1
