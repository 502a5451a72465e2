"""The effect of an accepted hypothesis: how the agent's sessions went in equal windows
before and after the decision, compared as shares of sessions with a 95 % interval.

The windows are `PSYCHOLOGIST_EFFECT_WINDOW_DAYS` long each: [decided - W, decided) and
[decided, decided + W); the second is still open until decided + W, and its shares are
those of the sessions that have ended in it so far. A window is counted by aggregation
queries over the agent's outcome records, never by reading events (gone after a day):
its sessions, those that ended abnormally, and those that show any signal kind specific
to the hypothesis (the kinds its cited events show, less those every abnormal end shows,
`loop.documents.GENERIC_KINDS`), and each kind on its own. Two round trips: the
hypothesis (and its latest trial), then every count at once. With a trial, the
randomized design's read (`loop.arms.randomized`) is served beside it.

Only counts: Firestore sums a field through an index that must hold it, and counts need
no index beyond the query's own (one per query shape, in firestore.indexes.json).

The after/before ratio of two shares is the risk ratio, with the exact interval the
randomised read uses (`loop.safe.confidence_sequence`), the windows' sessions taken as
given: the safe test of Turner, Ly and Grünwald for two samples of fixed sizes, whose
block is the two windows' sessions. No correction is added to zero cells,
and the interval holds at any number of sessions. A verdict needs at least
EFFECT_MIN_SESSIONS sessions in each window; `improved` and `worse` need the whole
interval below or above 1. It is an association over time, not the change's effect:
anything else that changed between the windows moves it too; a randomised trial
(`loop.arms.randomized`) is what measures the effect."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from google.cloud.firestore_v1 import FieldFilter
from typing_extensions import TypedDict

from functions.loop import store as outcome_store
from functions.loop.arms import arm_counts, randomized
from functions.loop.documents import SIGNAL_KINDS, Trial
from functions.loop.estimators import rounded, share_of
from functions.loop.randomization import DEFAULT_MEANINGFUL_RATIO
from functions.loop.safe import Table, confidence_sequence
from functions.psychologist import store
from functions.psychologist.documents import Hypothesis, HypothesisStatus
from functions.psychologist.requests import EffectParams
from functions.psychologist.trial_calls import specific_kinds
from shared.errors import conflict
from shared.http import Call, Reply
from shared.instance import settings
from shared.retention import iso, utcnow
from shared.store import counted, live_as, read_as

EFFECT_MIN_SESSIONS = 10
"""Sessions each window needs before any verdict other than `too_few_sessions`. Below
seven, even every session before showing the pattern and none after cannot exclude no
change (the interval's upper end stays above 1); ten leaves a margin over that."""
METHOD = (
    "An association over time, not proof that the change caused it: the risk ratio "
    "after/before of shares of sessions, with an exact 95% interval from the safe test for "
    "two-by-two tables (Turner, Ly and Grünwald, Journal of Statistical Planning and "
    "Inference 2024) at the windows' sizes, inverted over the ratio; no correction to zero "
    "cells. A randomised trial measures the effect."
)


class Verdict(StrEnum):
    IMPROVED = "improved"
    WORSE = "worse"
    NO_CLEAR_CHANGE = "no_clear_change"
    TOO_FEW_SESSIONS = "too_few_sessions"
    WITHHELD = "withheld"


@dataclass(frozen=True)
class Counts:
    sessions: int
    abnormal_ends: int
    with_signals: int


class WindowView(TypedDict):
    start: str
    end: str
    open: bool
    sessions: int
    abnormalEnds: int
    withSignals: int


class Comparison(TypedDict):
    shareBefore: float | None
    shareAfter: float | None
    ratio: float | None
    low: float | None
    high: float | None
    empty: bool
    """No ratio fits the windows' counts: no interval, and the verdict is withheld."""


def _window_queries(
    project_id: str, agent: str, window: tuple[datetime, datetime], kinds: list[str]
) -> list[Any]:
    """The window's sessions, those ended abnormally, and (when there are kinds) those
    showing any of them."""
    sessions: Any = (
        outcome_store.outcomes(project_id)
        .where(filter=FieldFilter("agent", "==", agent))
        .where(filter=FieldFilter("ended_at", ">=", window[0]))
        .where(filter=FieldFilter("ended_at", "<", window[1]))
    )
    queries = [sessions, sessions.where(filter=FieldFilter("abnormal_end", "==", 1))]
    if kinds:
        queries.append(
            sessions.where(filter=FieldFilter("signal_kinds", "array_contains_any", kinds))
        )
    return queries


def _counts(found: list[int]) -> Counts:
    sessions, abnormal, *with_signals = found
    return Counts(sessions, abnormal, sum(with_signals))


def compare(before: int, before_sessions: int, after: int, after_sessions: int) -> Comparison:
    """The after/before ratio of two shares of sessions, with its 95 % interval."""
    compared: Comparison = {
        "shareBefore": share_of(before, before_sessions),
        "shareAfter": share_of(after, after_sessions),
        "ratio": None,
        "low": None,
        "high": None,
        "empty": False,
    }
    if not before_sessions or not after_sessions:
        return compared
    found = confidence_sequence(Table(after, after_sessions, before, before_sessions))
    compared["ratio"] = rounded(found.ratio)
    compared["low"] = rounded(found.low)
    compared["high"] = rounded(found.high)
    compared["empty"] = found.empty
    return compared


def verdict(before: Counts, after: Counts, compared: Comparison) -> Verdict:
    if min(before.sessions, after.sessions) < EFFECT_MIN_SESSIONS:
        return Verdict.TOO_FEW_SESSIONS
    if compared["empty"]:
        return Verdict.WITHHELD
    low, high = compared["low"], compared["high"]
    if high is not None and high < 1:
        return Verdict.IMPROVED
    if low is not None and low > 1:
        return Verdict.WORSE
    return Verdict.NO_CLEAR_CHANGE


def _window(window: tuple[datetime, datetime], counts: Counts, now: datetime) -> WindowView:
    return {
        "start": iso(window[0]),
        "end": iso(window[1]),
        "open": window[1] > now,
        "sessions": counts.sessions,
        "abnormalEnds": counts.abnormal_ends,
        "withSignals": counts.with_signals,
    }


def _accepted(params: EffectParams) -> tuple[Hypothesis, datetime]:
    """The hypothesis and when it was accepted; 409 while it is not."""
    snapshot = store.hypotheses(params["projectId"]).document(params["hypothesisId"]).get()
    hypothesis = live_as(snapshot, Hypothesis, "The hypothesis")
    decided = hypothesis["decidedAt"]
    if hypothesis["status"] != HypothesisStatus.ACCEPTED or decided is None:
        raise conflict(
            f"The hypothesis is {hypothesis['status']}: an effect is measured from the time "
            "it was accepted."
        )
    return hypothesis, decided


def _per_kind(
    project_id: str, agent: str, windows: tuple[tuple[datetime, datetime], ...]
) -> list[Any]:
    """Each signal kind's sessions in each window, on its own."""
    return [
        outcome_store.outcomes(project_id)
        .where(filter=FieldFilter("agent", "==", agent))
        .where(filter=FieldFilter("signal_kinds", "array_contains", kind))
        .where(filter=FieldFilter("ended_at", ">=", window[0]))
        .where(filter=FieldFilter("ended_at", "<", window[1]))
        for kind in SIGNAL_KINDS
        for window in windows
    ]


def effect(call: Call) -> Reply:
    params = call.params_as(EffectParams)
    project_id = params["projectId"]
    hypothesis, decided = _accepted(params)
    kinds = specific_kinds(hypothesis)
    now = utcnow()
    length = timedelta(days=settings().psychologist_effect_window_days)
    kept_since = now - timedelta(days=settings().psychologist_hypothesis_retention_days)
    windows = ((max(decided - length, kept_since), decided), (decided, decided + length))
    agent = hypothesis["agenteAlvo"]
    queries = [_window_queries(project_id, agent, window, kinds) for window in windows]
    every = [query for window in queries for query in window]
    every += _per_kind(project_id, agent, windows)
    trial = _last_trial(hypothesis, project_id)
    with ThreadPoolExecutor(max_workers=len(every) + 1) as pool:
        arms = pool.submit(arm_counts, trial) if trial is not None else None
        found = list(pool.map(counted, every))
        counts = arms.result() if arms is not None else None
    size = len(queries[0])
    before, after = _counts(found[:size]), _counts(found[size : 2 * size])
    per_kind = found[2 * size :]
    abnormal = compare(before.abnormal_ends, before.sessions, after.abnormal_ends, after.sessions)
    signals = compare(before.with_signals, before.sessions, after.with_signals, after.sessions)
    meaningful = params.get("meaningfulRatio", DEFAULT_MEANINGFUL_RATIO)
    return Reply(
        {
            "projectId": project_id,
            "hypothesisId": hypothesis["id"],
            "agenteAlvo": agent,
            "decidedAt": iso(decided),
            "windowDays": length.days,
            "design": "before_after",
            "signalKinds": kinds,
            "before": _window(windows[0], before, now),
            "after": _window(windows[1], after, now),
            "signals": signals if kinds else None,
            "abnormalEnds": abnormal,
            "perKind": {
                kind: {
                    "specific": kind in kinds,
                    **compare(
                        per_kind[2 * index],
                        before.sessions,
                        per_kind[2 * index + 1],
                        after.sessions,
                    ),
                }
                for index, kind in enumerate(SIGNAL_KINDS)
            },
            "basis": "signals" if kinds else "abnormal_ends",
            "verdict": verdict(before, after, signals if kinds else abnormal),
            "minimumSessions": EFFECT_MIN_SESSIONS,
            "method": METHOD,
            "randomized": randomized(trial, counts, meaningful)
            if trial is not None and counts is not None
            else None,
        }
    )


def _last_trial(hypothesis: Hypothesis, project_id: str) -> Trial | None:
    trial_id = hypothesis.get("last_trial")
    if trial_id is None:
        return None
    return read_as(outcome_store.trial_ref(project_id, trial_id), Trial)
