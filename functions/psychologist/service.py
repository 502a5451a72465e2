"""Psychologist operations behind the HTTP entry points and the sweep."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any, Literal

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.loop import store as outcome_store
from functions.psychologist import store
from functions.psychologist.documents import (
    Analysis,
    AnalysisFailure,
    AnalysisStatus,
    AnalysisTrigger,
    Event,
    Hypothesis,
    HypothesisDecision,
    IndexHead,
    LastAnalysis,
    Session,
)
from functions.psychologist.requests import (
    AnalysisCreateRequest,
    AnalysisParams,
    DecisionParams,
    DecisionRequest,
    EventsAuditParams,
    HypothesesParams,
    ProjectParams,
    SessionsParams,
)
from functions.psychologist.telemetry.endings import new_analysis
from functions.psychologist.telemetry.event_index import look_up
from functions.psychologist.telemetry.ingestion import chunks_of, event_of, read_index
from functions.psychologist.views import (
    analysis_state,
    analysis_view,
    decider,
    decision_view,
    hypothesis_view,
    session_row,
)
from shared import jobs, logs
from shared.errors import ApiError, ErrorCode, not_found
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.instance import settings
from shared.retention import is_expired, parse_instant, utcnow
from shared.store import (
    Changes,
    as_stored,
    commit_if_unchanged,
    data_as,
    live_as,
    read_all,
    read_as,
    stream_as,
    transact,
    unchanged_since,
    writable,
)


def create_analysis(call: Call) -> Reply:
    """Queue an analysis of the session's log, in one read and one commit. A log that has
    not grown since its last analysis, which has not failed, is answered with that
    analysis and costs no Gemini call; a project past its token budget gets an analysis
    failed `budget_exhausted` at once. The session records the analysis in the same
    commit, conditioned on the session as read, so that repeats racing each other make
    one analysis."""
    project_id = call.params_as(ProjectParams)["projectId"]
    session_id = call.body_as(AnalysisCreateRequest)["sessionId"]
    session_ref = store.session_ref(project_id, session_id)
    spend = store.spend(project_id)

    def plan(batch: firestore.WriteBatch) -> Analysis:
        snapshots = read_all([session_ref, *spend.shards()])
        holder = snapshots[session_ref.path]
        session = data_as(holder, Session)
        if session is None:
            raise not_found("The session")
        standing = _standing_analysis(project_id, session)
        if standing is not None:
            return standing
        _, analysis = new_analysis(
            project_id, session_id, AnalysisTrigger.MANUAL, call.principal.user_id
        )
        if spend.used(snapshots) >= settings().psychologist_project_token_budget:
            spent = jobs.failure_changes(AnalysisFailure.BUDGET_EXHAUSTED)
            analysis = as_stored({**analysis, **spent}, Analysis)
        else:
            last: LastAnalysis = {"id": analysis["id"], "event_count": session["event_count"]}
            batch.update(session_ref, {"last_analysis": last}, option=unchanged_since(holder))
        batch.create(store.analysis_ref(project_id, analysis["id"]), writable(analysis))
        return analysis

    analysis = commit_if_unchanged(plan)
    logs.bind(analysis_id=analysis["id"])
    return Reply(analysis_view(analysis), status=202)


def _standing_analysis(project_id: str, session: Session) -> Analysis | None:
    """The session's last analysis, if the log has not grown since it was asked for and
    it is queued, processing or completed (a failed one may be asked for again)."""
    last = session.get("last_analysis")
    if last is None or last["event_count"] != session["event_count"]:
        return None
    analysis = read_as(store.analysis_ref(project_id, last["id"]), Analysis)
    if analysis is None or is_expired(analysis, utcnow()):
        return None
    status, _, _ = analysis_state(analysis)
    return None if status == AnalysisStatus.FAILED else analysis


def get_analysis(call: Call) -> Reply:
    params = call.params_as(AnalysisParams)
    snapshot = store.analysis_ref(params["projectId"], params["analysisId"]).get()
    analysis = live_as(snapshot, Analysis, "The analysis")
    return Reply(analysis_view(analysis))


def _decode_page_token(token: str) -> tuple[datetime, str]:
    try:
        created, hypothesis_id = json.loads(base64.urlsafe_b64decode(token.encode()))
        return parse_instant(str(created)), str(hypothesis_id)
    except (binascii.Error, ValueError, TypeError, OverflowError) as error:
        raise _unknown_page_token() from error


def _unknown_page_token() -> ApiError:
    return ApiError(
        ErrorCode.INVALID_REQUEST,
        "pageToken is not a token this endpoint returned.",
        issues=[{"path": ["pageToken"], "message": "Unknown page token", "code": "custom"}],
    )


def _page_token(created: datetime, last_id: str) -> str:
    raw = json.dumps([created.isoformat(), last_id]).encode()
    return base64.urlsafe_b64encode(raw).decode()


HYPOTHESIS_FILTERS: tuple[Literal["sessionId", "status", "agenteAlvo"], ...] = (
    "sessionId",
    "status",
    "agenteAlvo",
)
"""The parameters that filter the list, each on the stored field of its name (named as
literals, so that reading them from `HypothesesParams` is typed)."""


def list_hypotheses(call: Call) -> Reply:
    params = call.params_as(HypothesesParams)
    limit = params.get("limit", 50)
    query: Any = store.hypotheses(params["projectId"])
    for field in HYPOTHESIS_FILTERS:
        if field in params:
            query = query.where(filter=FieldFilter(field, "==", params[field]))
    query = query.order_by("createdAt", direction=firestore.Query.DESCENDING).order_by(
        "id", direction=firestore.Query.DESCENDING
    )
    if "pageToken" in params:
        created, hypothesis_id = _decode_page_token(params["pageToken"])
        query = query.start_after({"createdAt": created, "id": hypothesis_id})
    now = utcnow()
    found = list(stream_as(query.limit(limit + 1), Hypothesis).values())
    page = found[:limit]
    shown = [data for data in page if not is_expired(data, now)]
    headers = {}
    if len(found) > limit:
        headers["X-Next-Page-Token"] = _page_token(page[-1]["createdAt"], page[-1]["id"])
    return Reply([hypothesis_view(data) for data in shown], headers=headers)


def list_sessions(call: Call) -> Reply:
    """A project's sessions, newest first, by the filters given: one query of at most
    `limit + 1` documents (and, past the first page, one read of the page's last session,
    the cursor)."""
    params = call.params_as(SessionsParams)
    project_id, limit = params["projectId"], params.get("limit", 50)
    sessions = store.session_ref(project_id, "any").parent
    query: Any = sessions
    if "agent" in params:
        query = query.where(filter=FieldFilter("agents", "array_contains", params["agent"]))
    if "state" in params:
        query = query.where(filter=FieldFilter("state", "==", params["state"]))
    if "since" in params:
        query = query.where(filter=FieldFilter("created_at", ">=", parse_instant(params["since"])))
    if "until" in params:
        query = query.where(filter=FieldFilter("created_at", "<", parse_instant(params["until"])))
    query = query.order_by("created_at", direction=firestore.Query.DESCENDING)
    if "pageToken" in params:
        _, session_id = _decode_page_token(params["pageToken"])
        cursor = sessions.document(session_id).get()
        if not cursor.exists:
            raise _unknown_page_token()
        query = query.start_after(cursor)
    found = list(stream_as(query.limit(limit + 1), Session).items())
    page = found[:limit]
    headers = {}
    if len(found) > limit:
        last_id, last = page[-1]
        headers["X-Next-Page-Token"] = _page_token(last["created_at"], last_id)
    versions = instructions_versions(project_id, [session_id for session_id, _ in page])
    rows = [session_row(session_id, data, versions.get(session_id)) for session_id, data in page]
    return Reply(rows, headers=headers)


IN_VALUES = 30
"""Firestore's most values in one `in` filter."""


def instructions_versions(project_id: str, session_ids: list[str]) -> dict[str, int | None]:
    """The instructions version each session was started under, from the half of its
    outcome record AgentConnect wrote at its start: one query per 30 sessions, reading only
    the records of sessions AgentConnect started."""
    found: dict[str, int | None] = {}
    for start in range(0, len(session_ids), IN_VALUES):
        chunk = session_ids[start : start + IN_VALUES]
        query = (
            outcome_store.outcomes(project_id)
            .where(filter=FieldFilter("session_id", "in", chunk))
            .where(filter=FieldFilter("selection.seq", ">", 0))
            .select(["session_id", "selection.instructions_version"])
        )
        for snapshot in query.stream():
            data = snapshot.to_dict() or {}
            found[data["session_id"]] = data["selection"].get("instructions_version")
    return found


def decide(call: Call) -> Reply:
    params, body = call.params_as(DecisionParams), call.body_as(DecisionRequest)
    ref = store.hypotheses(params["projectId"]).document(params["hypothesisId"])

    def apply(transaction: firestore.Transaction) -> Hypothesis:
        current = live_as(ref.get(transaction=transaction), Hypothesis, "The hypothesis")
        now = utcnow()
        changes: Changes = {
            "status": body["status"],
            "decidedBy": decider(call.principal),
            "decidedAt": now,
            "updatedAt": now,
        }
        transaction.update(ref, changes)
        decision: HypothesisDecision = {
            "status": body["status"],
            "previousStatus": current["status"],
            "reason": body.get("reason"),
            "decidedBy": decider(call.principal),
            "decidedAt": now,
            "requestId": call.request_id,
            "expires_at": current.get("expires_at"),
        }
        transaction.create(ref.collection("decisions").document(new_ulid()), writable(decision))
        return as_stored({**current, **changes}, Hypothesis)

    return Reply(hypothesis_view(transact(apply)))


HISTORY_LIMIT = 100


def decision_history(call: Call) -> Reply:
    """Every decision on a hypothesis, newest first (at most HISTORY_LIMIT): who changed
    its status, from what, when and why. Two reads: the hypothesis, then its history."""
    params = call.params_as(DecisionParams)
    hypothesis_id = params["hypothesisId"]
    ref = store.hypotheses(params["projectId"]).document(hypothesis_id)
    live_as(ref.get(), Hypothesis, "The hypothesis")
    query = ref.collection("decisions").order_by("decidedAt", direction=firestore.Query.DESCENDING)
    decisions = stream_as(query.limit(HISTORY_LIMIT), HypothesisDecision).values()
    return Reply(
        {"hypothesisId": hypothesis_id, "decisions": [decision_view(d) for d in decisions]}
    )


def read_events(call: Call) -> Reply:
    """Events by id, for the audit read: the index says where each is kept, then the
    chunks that hold them are read in one round trip."""
    params = call.params_as(EventsAuditParams)
    project_id, session_id = params["projectId"], params["sessionId"]
    ids = list(dict.fromkeys(params["ids"].split(",")))
    now = utcnow()
    head = read_as(store.index_head(project_id, session_id), IndexHead)
    indexed = look_up(read_index(project_id, session_id, head, now), ids, now)
    chunks = chunks_of(project_id, session_id, indexed.values(), now)
    found: list[Event] = []
    for event_id in ids:
        event = event_of(indexed[event_id], chunks)
        if event is not None and event["id"] == event_id:
            found.append(event)
    returned = {event["id"] for event in found}
    missing = [event_id for event_id in ids if event_id not in returned]
    return Reply({"events": found, "missing": missing})
