"""How a session ends: by its agent's call, or by silence. A session fed by the events
endpoint that goes silent ends abnormally (`heartbeat_timeout`); one fed by telemetry,
whose turns say how its run went, ends as its turns say (`silent_end`). Every end queues
the session's analysis in the same transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.psychologist import store
from functions.psychologist.documents import (
    Analysis,
    AnalysisStatus,
    AnalysisTrigger,
    LastAnalysis,
    Session,
    SessionState,
)
from functions.psychologist.lifecycle import LIFECYCLE
from functions.psychologist.requests import SessionEndRequest, SessionParams
from functions.psychologist.telemetry.ingestion import heartbeat_interval
from functions.psychologist.views import session_view
from shared import jobs, logs
from shared.clients import db
from shared.errors import conflict, not_found
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.instance import settings
from shared.retention import utcnow
from shared.store import Changes, as_stored, read_as, transact, writable


class SilentEnd:
    """The causes of an end by silence, as `cause` names them."""

    HEARTBEAT_TIMEOUT = "heartbeat_timeout"
    """A session fed by the events endpoint stopped sending before its agent ended it."""
    TURNS_CLOSED = "turns_closed"
    """Every turn the telemetry showed closed, the last without error: a normal end."""
    LAST_TURN_FAILED = "last_turn_failed"
    """The last turn to close ended in error."""
    TURN_NEVER_CLOSED = "turn_never_closed"
    """A turn's records arrived but its end never did: the agent crashed or hung mid-turn."""


def silent_end(session: Session) -> tuple[str, str]:
    """(state, cause) of an open session that went silent."""
    if "source" not in session:
        return SessionState.CLOSED_ABNORMALLY, SilentEnd.HEARTBEAT_TIMEOUT
    turns = session.get("turns") or {"open": [], "closed": [], "last": None}
    if turns["open"]:
        return SessionState.CLOSED_ABNORMALLY, SilentEnd.TURN_NEVER_CLOSED
    last = turns["last"]
    if last is not None and last["failed"]:
        return SessionState.CLOSED_ABNORMALLY, SilentEnd.LAST_TURN_FAILED
    return SessionState.CLOSED, SilentEnd.TURNS_CLOSED


def new_analysis(
    project_id: str, session_id: str, trigger: AnalysisTrigger, requested_by: str | None
) -> tuple[str, Analysis]:
    analysis_id = new_ulid()
    now = utcnow()
    analysis: Analysis = {
        "id": analysis_id,
        "project_id": project_id,
        "session_id": session_id,
        "status": AnalysisStatus.QUEUED,
        "failure_code": None,
        "trigger": trigger,
        "requested_by": requested_by,
        "created_at": now,
        "expires_at": now + timedelta(hours=settings().psychologist_event_retention_hours),
        "started_at": None,
        "finished_at": None,
        "lease_until": None,
    }
    trace = logs.current_trace()
    if trace is not None:
        analysis["trace"] = trace
    return analysis_id, analysis


def close_session(
    transaction: firestore.Transaction,
    project_id: str,
    session_id: str,
    state: str,
    cause: str | None,
    current: Session,
    by_silence: bool = False,
) -> Session:
    """End an open session and, in the same transaction, queue its analysis: an abnormal
    end's asks Gemini; a normal end's only counts the log's signals into the session's
    outcomes, which the effect of an accepted suggestion compares. A telemetry-fed
    session's end `by_silence` is provisional (see `provisional`)."""
    changes: Changes = {"state": state, "cause": cause, "ended_at": utcnow()}
    if by_silence and "source" in current:
        changes["ended_by_silence"] = True
    elif current.get("ended_by_silence"):
        changes["ended_by_silence"] = False
    abnormal = state == SessionState.CLOSED_ABNORMALLY
    trigger = AnalysisTrigger.ABNORMAL_END if abnormal else AnalysisTrigger.SESSION_END
    analysis_id, analysis = new_analysis(project_id, session_id, trigger, None)
    transaction.create(store.analysis_ref(project_id, analysis_id), writable(analysis))
    changes["analysis_id"] = analysis_id
    if abnormal:
        last: LastAnalysis = {"id": analysis_id, "event_count": current["event_count"]}
        changes["last_analysis"] = last
    transaction.update(store.session_ref(project_id, session_id), changes)
    return as_stored({**current, **changes}, Session)


def end_session(call: Call) -> Reply:
    params, body = call.params_as(SessionParams), call.body_as(SessionEndRequest)
    project_id, session_id = params["projectId"], params["sessionId"]
    state, cause = body["state"], body.get("cause")
    if state == SessionState.CLOSED_ABNORMALLY and cause is None:
        cause = "reported_abnormal"
    ended = end(project_id, session_id, state, cause)
    if ended.state_before != SessionState.OPEN:
        raise conflict(f"The session has already ended ({ended.state_before}).")
    logs.bind(analysis_id=ended.session.get("analysis_id"))
    return Reply(session_view(project_id, session_id, ended.session))


@dataclass(frozen=True)
class Ended:
    session: Session
    state_before: str
    """OPEN when this call ended it."""


def provisional(session: Session) -> bool:
    """Whether the session is open, or ended only by silence while fed by telemetry: an
    agent that paused may speak again, so a later record reopens it and an explicit end
    replaces the sweep's."""
    return session["state"] == SessionState.OPEN or bool(session.get("ended_by_silence"))


def end(project_id: str, session_id: str, state: str, cause: str | None) -> Ended:
    """End the session when it is open or ended only by silence (404 when it does not
    exist); an explicitly ended session is left as it is."""
    session = store.session_ref(project_id, session_id)

    def apply(transaction: firestore.Transaction) -> Ended:
        current = read_as(session, Session, transaction)
        if current is None:
            raise not_found("The session")
        if not provisional(current):
            return Ended(current, current["state"])
        closed = close_session(transaction, project_id, session_id, state, cause, current)
        return Ended(closed, SessionState.OPEN)

    return transact(apply)


def sweep_stale() -> tuple[list[str], list[str]]:
    """End every open session silent for longer than the heartbeat timeout, and settle
    analyses stuck past their lease or queue deadline: the sessions' ids and the
    analyses' paths."""
    timeout = timedelta(seconds=settings().psychologist_heartbeat_timeout_s)
    cutoff = utcnow() - timeout - heartbeat_interval()
    stale = (
        db()
        .collection_group("sessions")
        .where(filter=FieldFilter("state", "==", SessionState.OPEN))
        .where(filter=FieldFilter("last_seen_at", "<", cutoff))
        .limit(jobs.SWEEP_BATCH)
    )
    ended = [
        ref
        for ref in (snapshot.reference for snapshot in stale.stream())
        if end_if_still_silent(ref, cutoff)
    ]
    return [ref.id for ref in ended], jobs.sweep(LIFECYCLE, jobs.SWEEP_BATCH)


def end_if_still_silent(session: firestore.DocumentReference, cutoff: datetime) -> bool:
    project_id = session.parent.parent.id

    def apply(transaction: firestore.Transaction) -> bool:
        current = read_as(session, Session, transaction)
        if (
            current is None
            or current["state"] != SessionState.OPEN
            or current.get("last_seen_at", cutoff) >= cutoff
        ):
            return False
        state, cause = silent_end(current)
        close_session(transaction, project_id, session.id, state, cause, current, by_silence=True)
        return True

    return transact(apply)
