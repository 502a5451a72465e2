"""The report's estimators: Wilson's interval at known values, SNIPW recovering a known
abnormal-end share from sessions whose target was drawn at random (weighted by each
version's own share), and a paired difference that keeps its width at small counts."""

from __future__ import annotations

import random

import pytest

from functions.loop.estimators import (
    Logged,
    bonferroni_z,
    difference,
    share_difference,
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


def test_a_paired_difference_finds_the_better_policy() -> None:
    logged, _ = simulated(7, 2_000)
    found = difference(logged, ["a"] * len(logged), ["b"] * len(logged))
    assert found is not None
    assert found.high < 0
    assert found.low < found.value < found.high
    assert (found.sessions, found.discordant) == (2_000, 2_000)


def test_two_policies_that_decide_alike_differ_by_zero_within_a_width_never_zero() -> None:
    """No session decided differently: the difference is 0, and its interval is the
    bound on the share that could differ (Wilson's at 0 of 2,000), not [0, 0]."""
    logged, chosen = simulated(7, 2_000)
    same = difference(logged, chosen, chosen)
    assert same is not None
    assert same.value == 0
    assert same.low == pytest.approx(-wilson(0, 2_000).high)  # type: ignore[operator]
    assert same.high == pytest.approx(wilson(0, 2_000).high)
    assert same.high > 0


def test_with_no_abnormal_end_among_the_discordant_the_difference_keeps_its_width() -> None:
    """Ten sessions decided differently, drawn half each way, all ended well: the
    difference of the two arms is 0 of 5 against 0 of 5, whose interval still spans what
    five sessions a side cannot rule out."""
    logged = [Logged("a" if i % 2 else "b", 0.5, 0) for i in range(10)]
    logged += [Logged("a", 0.5, int(i % 3 == 0)) for i in range(40)]
    proposed = ["a"] * 50
    current = ["b"] * 10 + ["a"] * 40
    found = difference(logged, proposed, current)
    assert found is not None
    assert found.value == 0
    assert found.low < -0.05
    assert found.high > 0.05
    assert found.discordant == 10


def test_newcombes_interval_matches_his_published_example() -> None:
    """Newcombe (1998), method 10: 56/70 against 48/80, 0.2 within 0.0524 to 0.3339."""
    first = [(1.0, 1)] * 56 + [(1.0, 0)] * 14
    second = [(1.0, 1)] * 48 + [(1.0, 0)] * 32
    found = share_difference(first, second)
    assert found is not None
    assert found.value == pytest.approx(0.2)
    assert found.low == pytest.approx(0.0524, abs=1e-4)
    assert found.high == pytest.approx(0.3339, abs=1e-4)


def test_each_session_stands_for_its_own_versions_share() -> None:
    """1,000 sessions under each of two versions: the first explored at 0.2 (200 read,
    40 abnormal), the second at 0.05 (50 read, 25 abnormal). The window's share is 0.35;
    weighting by the candidates alone, as if both had the same share, reads 0.26."""
    logged = [Logged("a", 0.2, int(i < 40), 0.2) for i in range(200)]
    logged += [Logged("a", 0.05, int(i < 25), 0.05) for i in range(50)]
    found = weighted(logged, ["a"] * len(logged)).estimate
    assert found.value == pytest.approx(0.35)
    alike = [Logged(each.target, 1.0, each.abnormal) for each in logged]
    assert weighted(alike, ["a"] * len(alike)).estimate.value == pytest.approx(0.26)


def test_the_paired_difference_covers_at_fifty_sessions() -> None:
    """Fifty sessions drawn between a (abnormal 0.1) and b (0.3); the policy proposed
    gives a to the even sessions and b to the odd, the current one b to all: the truth is
    -0.1. Its 95% interval covers in at least 93% of 400 seeded samples, and is never of
    zero width."""
    covered = zero_width = 0
    for seed in range(400):
        rng = random.Random(seed)  # noqa: S311 - a seeded simulation, not a secret
        logged = []
        for _ in range(50):
            target = rng.choice("ab")
            logged.append(Logged(target, 0.5, int(rng.random() < (0.1 if target == "a" else 0.3))))
        proposed = ["a" if i % 2 == 0 else "b" for i in range(50)]
        found = difference(logged, proposed, ["b"] * 50)
        assert found is not None
        covered += found.low <= -0.1 <= found.high
        zero_width += found.low == found.high
    assert covered >= 0.93 * 400
    assert zero_width == 0


def test_bonferroni_widens_with_the_number_of_comparisons() -> None:
    assert bonferroni_z(1) == pytest.approx(1.96, abs=1e-3)
    assert bonferroni_z(20) == pytest.approx(3.023, abs=1e-3)
