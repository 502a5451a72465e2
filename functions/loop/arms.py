"""A trial's read over the outcome records of its project: each arm's counts (assigned,
joined, abnormal ends, each signal kind, and for a pattern's trial the sessions that joined
the pattern), and the randomized design's verdict on them. Shared by the Psychologist's
trials and its patterns, which read a pattern's trial beside the pattern."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from google.cloud.firestore_v1 import FieldFilter

from functions.loop import store as outcome_store
from functions.loop.documents import (
    GENERIC_KINDS,
    SIGNAL_KINDS,
    AfterAdoption,
    Arm,
    GuardrailRead,
    Judged,
    KindRead,
    PatternRead,
    RandomizedRead,
    Trial,
    VersionRead,
)
from functions.loop.estimators import share_of
from functions.loop.randomization import (
    MIN_PER_ARM,
    SRM_ALPHA,
    WITHHELD,
    ArmCounts,
    needed,
    sample_ratio_mismatch,
    verdict_of,
)
from functions.loop.safe import ALPHA, HARM, Table, harm_found
from shared.instance import settings
from shared.retention import iso, utcnow
from shared.store import counted

PATTERN_BASIS = "pattern"
"""A pattern's trial is judged on the share of each arm's ended sessions whose summary
joined the pattern."""

METHOD = (
    "Sessions assigned at their start by a hash of (trial, session id); the risk ratio "
    "treatment/control of joined sessions showing the hypothesis's own pattern, with a 95% "
    "confidence sequence from an exact safe test for two-by-two tables (Turner, Ly and "
    "Grünwald, 'Generic E-variables for exact sequential k-sample tests that allow for "
    "optional stopping', Journal of Statistical Planning and Inference 2024), inverted over "
    "the ratio (Turner and Grünwald, 'Exact anytime-valid confidence intervals for "
    "contingency tables and beyond', Statistics & Probability Letters 2023), taken at the "
    "arms' joined sizes so that sessions lost for reasons unrelated to the outcome cannot "
    "make a verdict: exact at every sample size and valid however often it is read; high "
    "null means no upper end. A loss that depends on the outcome biases a read of the "
    "joined sessions alone, so improved must also hold with every assigned session not "
    "joined counted as showing the kind (unjoinedAsFailing); an unequal loss between the "
    "arms is flagged, for the trial's life, and withholds the verdict."
)


def _arm_queries(trial: Trial, arm: Arm, due_before: datetime) -> list[Any]:
    """An arm's assigned sessions, the joined ones, both again among those started before
    `due_before`, those started by hand, abnormal ends, each signal kind (a kind by its
    count above zero: a query holds one array-membership filter) and, for a pattern's
    trial, the sessions that joined the pattern (`pattern_id` on the record)."""
    assigned: Any = outcome_store.outcomes(trial["project_id"]).where(
        filter=FieldFilter("selection.trial_arms", "array_contains", f"{trial['id']}:{arm}")
    )
    joined = assigned.where(filter=FieldFilter("abnormal_end", "in", [0, 1]))
    due = FieldFilter("selection.started_at", "<", due_before)
    pattern_id = trial.get("pattern_id")
    return [
        assigned,
        joined,
        assigned.where(filter=due),
        joined.where(filter=due),
        assigned.where(filter=FieldFilter("selection.started_by", "==", "hook")),
        assigned.where(filter=FieldFilter("abnormal_end", "==", 1)),
        *(assigned.where(filter=FieldFilter(f"signals.{kind}", ">", 0)) for kind in SIGNAL_KINDS),
        *(
            [assigned.where(filter=FieldFilter("pattern_id", "==", pattern_id))]
            if pattern_id
            else []
        ),
    ]


def arm_counts(trial: Trial) -> dict[Arm, ArmCounts]:
    """Both arms' counts, every aggregation at once. A session is due once its events'
    retention has passed since its start: not joined by then, it never will be."""
    due_before = utcnow() - timedelta(hours=settings().psychologist_event_retention_hours)
    queries = [q for arm in Arm for q in _arm_queries(trial, arm, due_before)]
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        found = list(pool.map(counted, queries))
    size = len(found) // 2
    counts = {}
    for index, arm in enumerate(Arm):
        assigned, joined, due, due_joined, by_hand, abnormal, *rest = found[
            index * size : (index + 1) * size
        ]
        kinds, pattern = rest[: len(SIGNAL_KINDS)], rest[len(SIGNAL_KINDS) :]
        counts[arm] = ArmCounts(
            assigned,
            joined,
            abnormal,
            dict(zip(SIGNAL_KINDS, kinds, strict=True)),
            pattern[0] if pattern else None,
            due,
            due_joined,
            by_hand,
        )
    return counts


def randomized(trial: Trial, counts: dict[Arm, ArmCounts], meaningful: float) -> RandomizedRead:
    """The randomized design's read: each arm, each kind's ratio on its own, the verdict on
    a pattern's own rate for a pattern's trial, else on the hypothesis's own kinds (on
    abnormal ends when it has none), withheld on a sample-ratio mismatch, and the
    guardrail's one-sided test for harm."""
    treated, control = counts[Arm.TREATMENT], counts[Arm.CONTROL]
    kinds = [k for k in trial["signal_kinds"] if k not in GENERIC_KINDS]
    per_kind: dict[str, KindRead] = {}
    verdicts: dict[str, str] = {}
    for kind in SIGNAL_KINDS:
        kind_read = judged(treated.kinds[kind], treated, control.kinds[kind], control)
        verdicts[kind] = kind_read["verdict"]
        per_kind[kind] = {
            "specific": kind in kinds,
            "treatment": share_of(treated.kinds[kind], treated.joined),
            "control": share_of(control.kinds[kind], control.joined),
            **kind_read,
        }
    abnormal = judged(treated.abnormal, treated, control.abnormal, control)
    abnormal_verdict = abnormal["verdict"]
    pattern = _pattern_read(trial, treated, control)
    if pattern is not None:
        verdict = pattern["verdict"]
        basis = [(treated.pattern or 0, control.pattern or 0)]
        named = [PATTERN_BASIS]
    elif kinds:
        verdict = _combined({verdicts[k] for k in kinds})
        basis = [(treated.kinds[k], control.kinds[k]) for k in kinds]
        named = kinds
    else:
        verdict, basis = abnormal_verdict, [(treated.abnormal, control.abnormal)]
        named = ["abnormal_end"]
    latched = trial.get("mismatch_flagged_at")
    mismatch = latched is not None or sample_ratio_mismatch(treated, control)
    if mismatch and verdict in ("improved", "worse"):
        verdict = WITHHELD
    plan = needed(control, [shown for _, shown in basis], trial["share"], meaningful)
    read: RandomizedRead = {
        "design": "randomized",
        "trialId": trial["id"],
        "status": trial["status"],
        "share": trial["share"],
        "arms": {
            str(arm): {
                "assigned": c.assigned,
                "handStarted": c.hand_started,
                "sessions": c.joined,
                "lost": c.lost,
                "abnormalEnds": c.abnormal,
                "abnormalShare": share_of(c.abnormal, c.joined),
            }
            for arm, c in counts.items()
        },
        "sampleRatioMismatch": {
            "flagged": mismatch,
            "alpha": SRM_ALPHA,
            "flaggedAt": iso(latched) if latched is not None else None,
        },
        "abnormalEnds": abnormal,
        "signalKinds": per_kind,
        "basis": named,
        "pattern": pattern,
        "verdict": verdict,
        "minimumPerArm": MIN_PER_ARM,
        "meaningfulRatio": meaningful,
        "sessionsNeeded": plan.sessions,
        "sessionsNeededReason": plan.reason,
        "guardrail": _guardrail(trial, treated, control, basis, meaningful),
        "method": METHOD,
    }
    return read


def judged(
    shown_treated: int, treated: ArmCounts, shown_control: int, control: ArmCounts
) -> Judged:
    """One count's read over the joined sessions, and its verdict: `worse` as the joined
    sessions read it; `improved` only when it also holds with every assigned session not
    joined (still running, or never heard from) counted as showing it, in its arm. A session
    that never reports is taken as one that went wrong, as a crash before its telemetry
    would be: a loss that hides the treated arm's failures cannot make the change look
    better (`benchmarks/trials.py` simulates it)."""
    verdict, ratio = verdict_of(shown_treated, treated.joined, shown_control, control.joined)
    bound_verdict, bound = verdict_of(
        shown_treated + treated.lost,
        treated.assigned,
        shown_control + control.lost,
        control.assigned,
    )
    if verdict == "improved" and bound_verdict != "improved":
        verdict = "no_clear_change"
    return {**ratio, "verdict": verdict, "unjoinedAsFailing": bound}


def _pattern_read(trial: Trial, treated: ArmCounts, control: ArmCounts) -> PatternRead | None:
    """A pattern's trial: the pattern's own rate per arm, with the trial's interval."""
    pattern_id = trial.get("pattern_id")
    if not pattern_id:
        return None
    matching = treated.pattern or 0, control.pattern or 0
    read = judged(matching[0], treated, matching[1], control)
    return {
        "patternId": pattern_id,
        "treatment": {"matching": matching[0], "sessions": treated.joined},
        "control": {"matching": matching[1], "sessions": control.joined},
        "treatmentShare": share_of(matching[0], treated.joined),
        "controlShare": share_of(matching[1], control.joined),
        **read,
    }


def _guardrail(
    trial: Trial,
    treated: ArmCounts,
    control: ArmCounts,
    basis: list[tuple[int, int]],
    meaningful: float,
) -> GuardrailRead:
    """The one-sided test for harm a trial that reads worse stops itself by: harm on any of
    the basis's kinds, at ALPHA over them all (Bonferroni), and the sessions it needs to
    find the mirror of `meaningfulRatio`."""
    threshold = math.log(len(basis) / ALPHA)
    found = any(
        harm_found(Table(shown, treated.joined, seen, control.joined), threshold)
        for shown, seen in basis
    )
    harmful = round(1 / meaningful, 4)
    plan = needed(control, [seen for _, seen in basis], trial["share"], harmful, HARM)
    return {
        "alpha": ALPHA,
        "harmFound": found,
        "harmfulRatio": harmful,
        "sessionsNeeded": plan.sessions,
        "sessionsNeededReason": plan.reason,
    }


def _combined(verdicts: set[str]) -> str:
    """One verdict over the hypothesis's kinds: improved only when every kind improved,
    worse when any worsened."""
    if "worse" in verdicts:
        return "worse"
    if verdicts == {"improved"}:
        return "improved"
    if WITHHELD in verdicts:
        return WITHHELD
    if "too_few_sessions" in verdicts:
        return "too_few_sessions"
    return "no_clear_change"


ASSOCIATION = (
    "Sessions of the agent under the instructions version before the adoption against "
    "those under the adopted one, on the trial's basis: an association over time, not the "
    "trial's randomised result (which stays on the trial); anything else that changed "
    "between the two periods moves it too."
)


def after_adoption(trial: Trial) -> AfterAdoption | None:
    """For an adopted trial, its basis (the pattern, else the hypothesis's own kinds, else
    abnormal ends) over every session of the agent per instructions version, before the
    adoption against after it: the after/before ratio with the same exact interval."""
    adopted = trial.get("adopted_as")
    if adopted is None:
        return None
    versions = (adopted - 1 or None, adopted)
    queries = [query for version in versions for query in _version_queries(trial, version)]
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        found = list(pool.map(counted, queries))
    (before_n, before), (after_n, after) = found[0:2], found[2:4]
    verdict, ratio = verdict_of(after, after_n, before, before_n)
    return {
        "before": _version_view(versions[0], before, before_n),
        "after": _version_view(versions[1], after, after_n),
        **ratio,
        "verdict": verdict,
        "note": ASSOCIATION,
    }


def _version_view(version: int | None, showing: int, sessions: int) -> VersionRead:
    return {
        "version": version,
        "sessions": sessions,
        "showing": showing,
        "share": share_of(showing, sessions),
    }


def _version_queries(trial: Trial, version: int | None) -> list[Any]:
    """The agent's joined sessions under `version` (None: before any), and those showing
    the trial's basis."""
    sessions: Any = (
        outcome_store.outcomes(trial["project_id"])
        .where(filter=FieldFilter("selection.org_id", "==", trial["org_id"]))
        .where(filter=FieldFilter("selection.agent_id", "==", trial["agent_id"]))
        .where(filter=FieldFilter("selection.instructions_version", "==", version))
    )
    kinds = [k for k in trial["signal_kinds"] if k not in GENERIC_KINDS]
    pattern_id = trial.get("pattern_id")
    if pattern_id:
        showing = sessions.where(filter=FieldFilter("pattern_id", "==", pattern_id))
    elif kinds:
        showing = sessions.where(filter=FieldFilter("signal_kinds", "array_contains_any", kinds))
    else:
        showing = sessions.where(filter=FieldFilter("abnormal_end", "==", 1))
    return [sessions.where(filter=FieldFilter("abnormal_end", "in", [0, 1])), showing]
