"""Randomised trials of an accepted suggestion, pure: which arm a session is in, and what
the arms' counts say.

A session is assigned when it starts, by a hash of (trial, session id): the same session
is always in the same arm, so a retried start gets it again, and nothing is reassigned
later. The verdict is on the risk ratio treatment/control of sessions showing the
hypothesis's own pattern (its specific signal kinds; ended abnormally when it has none),
with a 95 % confidence sequence that is exact at every sample size and stays valid however
often it is read (a safe test inverted, `safe.confidence_sequence`). `python -m benchmarks
--only trials` prints its false-verdict rate read after every session, its power, and
whether `sessionsNeeded` holds."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from functions.outcomes.documents import Arm, RunningTrial
from functions.outcomes.estimators import rounded
from functions.outcomes.safe import Table, confidence_sequence, sessions_needed

MIN_PER_ARM = 1
"""Sessions each arm needs before a verdict other than `too_few_sessions`: the sequence is
exact from the first session, so one in each arm."""
DEFAULT_MEANINGFUL_RATIO = 0.7


def unit_hash(what: str, session_id: str) -> float:
    """A number in [0, 1) fixed by (what, session id): the same session always draws the
    same, and different sessions draw as if at random."""
    digest = hashlib.sha256(f"{what}\0{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def arm_of(trial_id: str, session_id: str, share: float) -> Arm:
    """Treatment for `share` of sessions, by a hash of (trial, session)."""
    return Arm.TREATMENT if unit_hash(f"trial:{trial_id}", session_id) < share else Arm.CONTROL


@dataclass(frozen=True)
class Assignment:
    trial_id: str
    trial: RunningTrial
    arm: Arm


def assignments(running: dict[str, RunningTrial], session_id: str) -> list[Assignment]:
    """The running trials that apply to a starting session, each with its arm: every one
    whose `maxSessions` is not reached, in trial id order."""
    return [
        Assignment(trial_id, trial, arm_of(trial_id, session_id, trial["share"]))
        for trial_id, trial in sorted(running.items())
        if trial["max_sessions"] is None or trial["assigned"] < trial["max_sessions"]
    ]


@dataclass(frozen=True)
class ArmCounts:
    assigned: int
    """Sessions assigned to the arm and recorded in the project."""
    joined: int
    """Those whose log ended there: the ones counted."""
    abnormal: int
    kinds: dict[str, int]
    """Joined sessions showing each signal kind."""

    @property
    def lost(self) -> int:
        return self.assigned - self.joined


def verdict_of(
    treated: int, treated_n: int, control: int, control_n: int, share: float
) -> tuple[str, dict[str, float | None]]:
    """The verdict and the ratio with its confidence sequence (`high` None: no upper
    end), for a trial giving treatment to `share` of sessions."""
    found = confidence_sequence(Table(treated, treated_n, control, control_n), share)
    shown = {
        "ratio": rounded(found.ratio),
        "low": rounded(found.low),
        "high": rounded(found.high),
    }
    if min(treated_n, control_n) < MIN_PER_ARM:
        return "too_few_sessions", shown
    if found.high is not None and found.high < 1:
        return "improved", shown
    if found.low > 1:
        return "worse", shown
    return "no_clear_change", shown


def needed(control: ArmCounts, treated_share: float, meaningful_ratio: float, count: int) -> int:
    """Sessions (both arms) for 80 % power at the control share of the pattern seen so far."""
    return sessions_needed(count, control.joined, meaningful_ratio, treated_share)
