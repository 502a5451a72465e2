"""A trial's arms and verdict, decided in pure functions: stable arms by a hash, the cap
on assigned sessions, a confidence sequence that is wider than a fixed interval and
narrows with sessions, and the sessions needed for 80 % power."""

from __future__ import annotations

import pytest

from functions.outcomes.documents import Arm, RunningTrial
from functions.outcomes.estimators import risk_ratio_sequence, sessions_needed
from functions.outcomes.trials import arm_of, assignments, verdict_of

pytestmark = pytest.mark.pure


def running(share: float = 0.5, cap: int | None = None, assigned: int = 0) -> RunningTrial:
    return {
        "project_id": "p",
        "hypothesis_id": "h",
        "share": share,
        "sugestao": "s",
        "max_sessions": cap,
        "assigned": assigned,
    }


def test_a_session_always_gets_the_same_arm_and_about_the_share_are_treated() -> None:
    arms = [arm_of("T1", f"s-{n}", 0.3) for n in range(10_000)]
    assert arms == [arm_of("T1", f"s-{n}", 0.3) for n in range(10_000)]
    assert 0.28 < arms.count(Arm.TREATMENT) / len(arms) < 0.32
    other = [arm_of("T2", f"s-{n}", 0.3) for n in range(10_000)]
    assert other != arms


def test_a_trial_at_its_cap_assigns_no_more_and_trials_are_assigned_independently() -> None:
    found = assignments({"A": running(cap=2, assigned=2), "B": running(), "C": running()}, "s-1")
    assert [a.trial_id for a in found] == ["B", "C"]


def test_the_sequence_is_wider_than_a_fixed_interval_and_narrows_with_sessions() -> None:
    small = risk_ratio_sequence(10, 50, 20, 50)
    large = risk_ratio_sequence(100, 500, 200, 500)
    assert small.ratio == pytest.approx(0.5)
    assert small.low is not None
    assert small.high is not None
    assert large.low is not None
    assert large.high is not None
    assert (large.high - large.low) < (small.high - small.low)
    assert small.high > 0.5 * 2.0
    assert large.high < 1


def test_verdicts_need_ten_sessions_an_arm_and_the_whole_sequence_on_one_side() -> None:
    assert verdict_of(0, 9, 9, 9)[0] == "too_few_sessions"
    assert verdict_of(100, 500, 200, 500)[0] == "improved"
    assert verdict_of(200, 500, 100, 500)[0] == "worse"
    assert verdict_of(100, 500, 100, 500)[0] == "no_clear_change"


def test_sessions_needed_grows_as_the_effect_shrinks_and_refuses_the_impossible() -> None:
    strong, weak = sessions_needed(0.3, 0.5, 0.5), sessions_needed(0.3, 0.8, 0.5)
    assert strong is not None
    assert weak is not None
    assert strong < weak
    assert sessions_needed(0.0, 0.5, 0.5) is None
    assert sessions_needed(0.3, 1.0, 0.5) is None
