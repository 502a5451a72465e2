"""Calibration: how often people accepted hypotheses at each band of the confidence the
model reported for them (`confiancaPercent`). A well-calibrated model's 80-100 band is
accepted far more often than its 0-20 band.

Beside it, what trials learned: per band, how many trials of the band's hypotheses'
suggestions have stopped and how many of them read `improved` (the verdict kept when a
trial stops).

Counted with Firestore aggregation queries, never by reading the hypotheses: per band,
one query counts every hypothesis in the window, two more the accepted and the
dismissed, and two the stopped trials and the helpful ones, all 25 in flight at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from google.cloud.firestore_v1 import FieldFilter
from typing_extensions import TypedDict

from functions.loop import store as outcome_store
from functions.loop.documents import TrialStatus
from functions.psychologist import store
from functions.psychologist.documents import HypothesisStatus
from functions.psychologist.requests import CalibrationParams
from shared.errors import ApiError, ErrorCode
from shared.http import Call, Reply
from shared.instance import settings
from shared.retention import iso, parse_instant, utcnow
from shared.store import counted

MAX_PERCENT = 100
BANDS = ((0, 20), (20, 40), (40, 60), (60, 80), (80, MAX_PERCENT))
DEFAULT_WINDOW = timedelta(days=90)
"""As long as hypotheses are kept (PSYCHOLOGIST_HYPOTHESIS_RETENTION_DAYS' default)."""
COUNTED: tuple[dict[str, str], ...] = (
    {},
    {"status": HypothesisStatus.ACCEPTED},
    {"status": HypothesisStatus.DISMISSED},
)
"""What each band counts of hypotheses: every one, then the accepted, then the dismissed."""
TRIALS_COUNTED: tuple[dict[str, str], ...] = (
    {"status": TrialStatus.STOPPED},
    {"status": TrialStatus.STOPPED, "verdict": "improved"},
)
"""And of trials: the stopped ones, then those whose verdict found the change helpful."""


class Band(TypedDict):
    fromPercent: int
    toPercent: int
    hypotheses: int
    accepted: int
    dismissed: int
    proposed: int
    acceptedRate: float | None
    trials: BandTrials


class BandTrials(TypedDict):
    stopped: int
    """Trials of the band's hypotheses' suggestions that have stopped."""
    helpful: int
    """Of them, those whose randomized verdict read improved."""
    helpfulRate: float | None


def _query(
    collection: Any,
    agent: str | None,
    window: tuple[datetime, datetime],
    band: tuple[int, int],
    equal: dict[str, str],
) -> Any:
    """What one band counts of `collection` (hypotheses, or trials, which carry their
    hypothesis's confidence, agent and creation): those with each field of `equal`."""
    low, high = band
    query: Any = collection
    filters = [
        FieldFilter("createdAt", ">=", window[0]),
        FieldFilter("createdAt", "<", window[1]),
        FieldFilter("confiancaPercent", ">=", low),
        FieldFilter("confiancaPercent", "<" if high < MAX_PERCENT else "<=", high),
    ]
    if agent is not None:
        filters.append(FieldFilter("agenteAlvo", "==", agent))
    filters += [FieldFilter(field, "==", value) for field, value in equal.items()]
    for condition in filters:
        query = query.where(filter=condition)
    # Firestore would order the two inequality fields by name (confiancaPercent first);
    # the declared indexes put createdAt first.
    return query.order_by("createdAt").order_by("confiancaPercent")


def _band(
    band: tuple[int, int], total: int, accepted: int, dismissed: int, stopped: int, helpful: int
) -> Band:
    decided = accepted + dismissed
    return {
        "fromPercent": band[0],
        "toPercent": band[1],
        "hypotheses": total,
        "accepted": accepted,
        "dismissed": dismissed,
        "proposed": total - decided,
        "acceptedRate": round(accepted / decided, 4) if decided else None,
        "trials": {
            "stopped": stopped,
            "helpful": helpful,
            "helpfulRate": round(helpful / stopped, 4) if stopped else None,
        },
    }


def retained_since() -> datetime:
    """Hypotheses created before this have expired: Firestore's TTL deletes them some time
    after `expires_at`, and until then they must not be counted. Bounding `createdAt`
    keeps the count on the indexes it has (`expires_at` is not indexed)."""
    return utcnow() - timedelta(days=settings().psychologist_hypothesis_retention_days)


def calibration(call: Call) -> Reply:
    params = call.params_as(CalibrationParams)
    project_id, agent = params["projectId"], params.get("agenteAlvo")
    end = parse_instant(params["to"]) if "to" in params else utcnow()
    start = parse_instant(params["from"]) if "from" in params else end - DEFAULT_WINDOW
    if start >= end:
        raise ApiError(ErrorCode.INVALID_REQUEST, "The window's from must come before its to.")
    start = max(start, retained_since())
    window = (start, end)
    hypotheses, trials = store.hypotheses(project_id), outcome_store.trials(project_id)
    each = len(COUNTED) + len(TRIALS_COUNTED)
    queries = [
        query
        for band in BANDS
        for query in (
            *(_query(hypotheses, agent, window, band, equal) for equal in COUNTED),
            *(_query(trials, agent, window, band, equal) for equal in TRIALS_COUNTED),
        )
    ]
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        counts = list(pool.map(counted, queries))
    bands = [
        _band(band, *counts[index * each : (index + 1) * each]) for index, band in enumerate(BANDS)
    ]
    return Reply(
        {
            "projectId": project_id,
            "agenteAlvo": agent,
            "from": iso(start),
            "to": iso(end),
            "bands": bands,
        }
    )
