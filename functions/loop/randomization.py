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
import math
from dataclasses import dataclass
from statistics import NormalDist

from functions.loop.documents import Arm, RatioRead, RunningTrial
from functions.loop.estimators import rounded, wilson_bounds
from functions.loop.safe import (
    EITHER_WAY,
    HELP_AND_HARM,
    Shifts,
    Table,
    confidence_sequence,
    log_e_value,
    sessions_needed,
)

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
    pattern: int | None = None
    """For a pattern's trial, joined sessions whose summary joined the pattern."""
    due: int = 0
    """Assigned sessions started longer ago than their events are kept: one not joined by
    then never will be."""
    due_joined: int = 0
    hand_started: int = 0
    """Assigned sessions started by hand and registered by the agent's own hook."""

    @property
    def lost(self) -> int:
        """Not joined yet: still running, or never heard from."""
        return self.assigned - self.joined

    @property
    def lost_for_good(self) -> int:
        return self.due - self.due_joined


WITHHELD = "withheld"
"""The verdict when the read cannot be trusted: the arms lost sessions unequally beyond
chance (a sample-ratio mismatch), or no ratio fits the data (an empty interval)."""


def verdict_of(treated: int, treated_n: int, control: int, control_n: int) -> tuple[str, RatioRead]:
    """The verdict and the ratio with its confidence sequence at the arms' joined sizes
    (`high` None: no upper end; `empty`: no ratio fits, both ends None)."""
    found = confidence_sequence(Table(treated, treated_n, control, control_n))
    shown: RatioRead = {
        "ratio": rounded(found.ratio),
        "low": rounded(found.low),
        "high": rounded(found.high),
        "empty": found.empty,
    }
    if min(treated_n, control_n) < MIN_PER_ARM:
        return "too_few_sessions", shown
    if found.empty:
        return WITHHELD, shown
    if found.high is not None and found.high < 1:
        return "improved", shown
    if found.low is not None and found.low > 1:
        return "worse", shown
    return "no_clear_change", shown


SRM_ALPHA = 0.01
SRM_LOG_THRESHOLD = math.log(1 / SRM_ALPHA)


def sample_ratio_mismatch(treated: ArmCounts, control: ArmCounts) -> bool:
    """Whether the arms lost different shares of their assigned sessions beyond chance:
    the same exact, anytime-valid test on (lost for good, due) per arm, betting on a
    difference either way, at 1 % (the chance of ever raising it when both arms lose
    alike). Only sessions started longer ago than their events are kept count: a session
    still running, or still being analysed, is not lost, and an arm whose sessions take
    longer to judge (an abnormal end's analysis) must not raise a flag that stays."""
    if min(treated.due, control.due) == 0:
        return False
    table = Table(treated.lost_for_good, treated.due, control.lost_for_good, control.due)
    return log_e_value(table, 1.0, EITHER_WAY) >= SRM_LOG_THRESHOLD


@dataclass(frozen=True)
class Needed:
    """Sessions over both arms for 80 % power, or None with the reason no number holds."""

    sessions: int | None
    reason: str | None = None


PLANNING_Z = NormalDist().inv_cdf(0.8)
"""The control share a number is planned at is the lower end of its one-sided 80 % Wilson
interval, so that a pattern rarer than it has looked so far is not promised too few."""


def needed(
    control: ArmCounts,
    counts: list[int],
    treated_share: float,
    ratio: float,
    shifts: Shifts = HELP_AND_HARM,
) -> Needed:
    """Sessions at which a true `ratio` on every kind counted in `counts` (control
    sessions showing it) is read with 80 % power: each kind at 1 - 0.2 / kinds, since an
    `improved` needs them all, the kind that needs most governing."""
    if control.joined == 0:
        return Needed(None, "no_control_sessions")
    power = 1 - 0.2 / len(counts)
    most = 0
    for count in counts:
        if count == 0:
            return Needed(None, "pattern_not_seen_in_control")
        planned = wilson_bounds(count / control.joined, control.joined, PLANNING_Z)[0]
        found = sessions_needed(planned, ratio, treated_share, shifts, power)
        if found is None:
            return Needed(None, "beyond_reach")
        most = max(most, found)
    return Needed(most)
