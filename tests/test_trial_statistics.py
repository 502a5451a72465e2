"""A trial's arms, decided in pure functions: stable arms by a hash and the cap on
assigned sessions. Its verdict and sessions needed: tests/test_safe_test.py."""

from __future__ import annotations

import pytest

from functions.loop.documents import Arm, RunningTrial
from functions.loop.randomization import arm_of, assignments

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
