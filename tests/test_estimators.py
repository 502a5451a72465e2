"""The report's estimators: Wilson's interval at known values, and SNIPW recovering a
known abnormal-end share from sessions whose target was drawn at random."""

from __future__ import annotations

import random

import pytest

from functions.outcomes.estimators import (
    Logged,
    bonferroni_z,
    difference,
    weighted,
    wilson,
)

pytestmark = pytest.mark.pure


def test_wilson_matches_its_published_values_and_stays_inside_zero_and_one() -> None:
    half = wilson(5, 10)
    assert half.low == pytest.approx(0.2366, abs=1e-4)
    assert half.high == pytest.approx(0.7634, abs=1e-4)
    none = wilson(0, 10)
    assert none.low == 0.0
    assert none.high == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0).share is None


def test_a_policy_that_never_matches_a_logged_target_has_no_estimate() -> None:
    logged = [Logged("a", 0.5, 1), Logged("a", 0.5, 0)]
    found = weighted(logged, ["b", None])
    assert (found.estimate.value, found.estimate.matched) == (None, 0)


def simulated(seed: int, sessions: int) -> tuple[list[Logged], list[str]]:
    """Targets a and b drawn uniformly; a ends abnormally at 0.2, b at 0.5. The policy
    evaluated gives a to sessions with an even index, b to the others: truth 0.35."""
    rng = random.Random(seed)  # noqa: S311 - a seeded simulation, not a secret
    logged, chosen = [], []
    for index in range(sessions):
        target = rng.choice("ab")
        abnormal = int(rng.random() < (0.2 if target == "a" else 0.5))
        logged.append(Logged(target, 0.5, abnormal))
        chosen.append("a" if index % 2 == 0 else "b")
    return logged, chosen


def test_snipw_recovers_a_known_share_and_covers_it() -> None:
    covered = 0
    for seed in range(200):
        logged, chosen = simulated(seed, 400)
        estimate = weighted(logged, chosen).estimate
        assert estimate.low is not None
        assert estimate.high is not None
        covered += estimate.low <= 0.35 <= estimate.high
    assert 180 <= covered <= 198
    logged, chosen = simulated(1, 20_000)
    assert weighted(logged, chosen).estimate.value == pytest.approx(0.35, abs=0.015)


def test_a_paired_difference_finds_the_better_policy_and_not_an_equal_one() -> None:
    logged, _ = simulated(7, 2_000)
    always_a = weighted(logged, ["a"] * len(logged))
    always_b = weighted(logged, ["b"] * len(logged))
    found = difference(always_a, always_b)
    assert found is not None
    assert found.high < 0
    same = difference(always_a, always_a)
    assert same is not None
    assert same.low == same.high == 0


def test_bonferroni_widens_with_the_number_of_comparisons() -> None:
    assert bonferroni_z(1) == pytest.approx(1.96, abs=1e-3)
    assert bonferroni_z(20) == pytest.approx(3.023, abs=1e-3)
