"""docs/performance.md is what the bench's results give: a new bench run makes it stale
until `evidencia performance` writes it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import performance

pytestmark = pytest.mark.pure


def test_docs_performance_is_what_the_current_results_give() -> None:
    stale = "docs/performance.md is stale: run `evidencia performance` (make bench writes it too)"
    assert performance.write(check=True) == 0, stale
    assert performance.TARGET.read_text(encoding="utf-8") == performance.render()


def rerun_with_warm_ratio(ratio: float, into: Path) -> Path:
    """The current results, but `research_status` answering `ratio` times its floor warm."""
    results = json.loads(performance.RESULTS.read_text(encoding="utf-8"))
    results["warm_latency"]["research_status"]["p50_ratio"] = ratio
    into.write_text(json.dumps(results), encoding="utf-8")
    return into


def test_a_slower_warm_status_makes_the_page_stale_and_its_target_unmet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slower = rerun_with_warm_ratio(1.5, tmp_path / "results.json")
    monkeypatch.setattr(performance, "RESULTS", slower)
    targets = performance.render().split("## Warm latency")[0].splitlines()
    (warm,) = [line for line in targets if line.startswith("- **Warm p50")]
    assert "not met in this run" in warm
    assert "`research_status` 1.50" in warm
    assert performance.write(check=True) == 1


def test_a_launcher_slower_than_a_second_beyond_its_gemini_call_is_not_met(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = json.loads(performance.RESULTS.read_text(encoding="utf-8"))
    results["launch"]["beyond_gemini"]["p50_ms"] = 1250.0
    slower = tmp_path / "results.json"
    slower.write_text(json.dumps(results), encoding="utf-8")
    monkeypatch.setattr(performance, "RESULTS", slower)
    targets = performance.render().split("## Warm latency")[0].splitlines()
    (launch,) = [line for line in targets if line.startswith("- **`evidencia launch` adds")]
    assert "not met in this run" in launch
    assert "p50 1250 ms beyond the Gemini call" in launch


def test_a_codex_launch_slower_than_a_second_beyond_its_gemini_call_is_not_met(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = json.loads(performance.RESULTS.read_text(encoding="utf-8"))
    results["launch_codex"]["beyond_gemini"]["p50_ms"] = 1250.0
    slower = tmp_path / "results.json"
    slower.write_text(json.dumps(results), encoding="utf-8")
    monkeypatch.setattr(performance, "RESULTS", slower)
    page = performance.render()
    targets = page.split("## Warm latency")[0].splitlines()
    (launch,) = [line for line in targets if line.startswith("- **For Codex too")]
    assert "not met in this run" in launch
    assert "p50 1250 ms beyond the Gemini call" in launch
    assert "| added beyond the Gemini call |" in page.split("## Launcher")[1]
