"""Calibration: how often people accepted hypotheses at each band of the confidence the
model reported for them (`confiancaPercent`). A well-calibrated model's 80-100 band is
accepted far more often than its 0-20 band.

Counted with Firestore aggregation queries, never by reading the hypotheses: per band,
one query counts every hypothesis in the window and two more count the accepted and the
dismissed, all fifteen in flight at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from google.cloud.firestore_v1 import FieldFilter
from typing_extensions import TypedDict

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
COUNTED = (None, HypothesisStatus.ACCEPTED, HypothesisStatus.DISMISSED)
"""What each band counts: every hypothesis, then the accepted, then the dismissed."""


class Band(TypedDict):
    fromPercent: int
    toPercent: int
    hypotheses: int
    accepted: int
    dismissed: int
    proposed: int
    acceptedRate: float | None


def _query(
    project_id: str,
    agent: str | None,
    window: tuple[datetime, datetime],
    band: tuple[int, int],
    status: str | None,
) -> Any:
    low, high = band
    query: Any = store.hypotheses(project_id)
    filters = [
        FieldFilter("createdAt", ">=", window[0]),
        FieldFilter("createdAt", "<", window[1]),
        FieldFilter("confiancaPercent", ">=", low),
        FieldFilter("confiancaPercent", "<" if high < MAX_PERCENT else "<=", high),
    ]
    if agent is not None:
        filters.append(FieldFilter("agenteAlvo", "==", agent))
    if status is not None:
        filters.append(FieldFilter("status", "==", status))
    for condition in filters:
        query = query.where(filter=condition)
    # Firestore would order the two inequality fields by name (confiancaPercent first);
    # the declared indexes put createdAt first.
    return query.order_by("createdAt").order_by("confiancaPercent")


def _band(band: tuple[int, int], total: int, accepted: int, dismissed: int) -> Band:
    decided = accepted + dismissed
    return {
        "fromPercent": band[0],
        "toPercent": band[1],
        "hypotheses": total,
        "accepted": accepted,
        "dismissed": dismissed,
        "proposed": total - decided,
        "acceptedRate": round(accepted / decided, 4) if decided else None,
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
    queries = [
        _query(project_id, agent, (start, end), band, status)
        for band in BANDS
        for status in COUNTED
    ]
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        counts = list(pool.map(counted, queries))
    bands = [
        _band(band, *counts[index * len(COUNTED) : (index + 1) * len(COUNTED)])
        for index, band in enumerate(BANDS)
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
