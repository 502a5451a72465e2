"""Psychologist operations behind the HTTP entry points and the sweep."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.psychologist import store
from functions.psychologist.documents import (
    Analysis,
    AnalysisFailure,
    AnalysisStatus,
    AnalysisTrigger,
    Event,
    EventChunk,
    Hypothesis,
    HypothesisDecision,
    IndexGeneration,
    IndexHead,
    LastAnalysis,
    Session,
    SessionState,
)
from functions.psychologist.event_index import (
    Generation,
    Indexed,
    body_key,
    entry,
    live_sealed,
    look_up,
    new_chunk_id,
    plan_index,
)
from functions.psychologist.lifecycle import LIFECYCLE
from functions.psychologist.requests import (
    AnalysisCreateRequest,
    AnalysisParams,
    DecisionParams,
    DecisionRequest,
    EventsAuditParams,
    EventsRequest,
    HypothesesParams,
    ProjectParams,
    SessionEndRequest,
    SessionParams,
)
from functions.psychologist.views import (
    analysis_state,
    analysis_view,
    decider,
    decision_view,
    hypothesis_view,
    session_view,
)
from shared import jobs, logs
from shared.clients import db
from shared.errors import ApiError, ErrorCode, Issue, conflict, not_found
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.instance import settings
from shared.retention import is_expired, parse_instant, to_micros, utcnow
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
    write_if_unchanged,
)

MAX_DATA_BYTES = 8 * 1024
CHUNK_BYTES = 800_000


def _check_data_sizes(events: list[Event]) -> None:
    issues: list[Issue] = [
        {
            "path": ["events", index, "data"],
            "message": f"data is over {MAX_DATA_BYTES} bytes",
            "code": "too_big",
        }
        for index, event in enumerate(events)
        if len(json.dumps(event.get("data", {}))) > MAX_DATA_BYTES
    ]
    if issues:
        raise ApiError(ErrorCode.INVALID_REQUEST, "An event's data is too large.", issues=issues)


def _unique_in_batch(events: list[Event]) -> tuple[dict[str, Event], int]:
    """The batch's events by id, and how many repeated an earlier one exactly."""
    unique: dict[str, Event] = {}
    repeats = 0
    for event in events:
        earlier = unique.get(event["id"])
        if earlier is None:
            unique[event["id"]] = event
        elif body_key(earlier) == body_key(event):
            repeats += 1
        else:
            raise conflict(f"Event {event['id']} appears twice in the batch with different bodies.")
    return unique, repeats


def event_chunks(events: list[Event]) -> list[list[tuple[Event, str]]]:
    """The batch's new events, JSON-encoded, grouped into arrays that each stay well under
    Firestore's 1 MiB document limit. The analysis reads these few documents instead of
    one document per event; each event's own document points at its place in them."""
    chunks: list[list[tuple[Event, str]]] = [[]]
    size = 0
    for event in events:
        encoded = json.dumps(event, separators=(",", ":"))
        if chunks[-1] and size + len(encoded) > CHUNK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append((event, encoded))
        size += len(encoded) + 1
    return [chunk for chunk in chunks if chunk]


@dataclass(frozen=True)
class SessionWrite:
    """What a batch writes to its session: the whole document when it is the first, else
    server-side transforms that need no read."""

    create: bool
    changes: Changes


@dataclass(frozen=True)
class IngestPlan:
    fresh: list[Event]
    """The batch's events to store, in the order sent."""
    duplicates: int
    session: SessionWrite | None
    """None when the session exists and the batch brought nothing new."""


def plan_ingest(
    current: Session | None,
    batch: dict[str, Event],
    known: dict[str, Indexed | None],
    repeats: int,
    now: datetime,
    interval: timedelta,
) -> IngestPlan:
    """A batch's decision from the session and what the event index holds of its events
    (by event id, None when absent): an event indexed and not expired is a duplicate when
    its body is the same and a conflict when it is not; an expired one is received anew;
    an ended session takes no new event (a replayed batch is still answered)."""
    fresh: list[Event] = []
    duplicates = repeats
    for event_id, event in batch.items():
        indexed = known.get(event_id)
        if indexed is None or indexed.expires_at <= now:
            fresh.append(event)
        elif indexed.body == body_key(event):
            duplicates += 1
        else:
            raise conflict(f"Event {event_id} was already received with a different body.")
    if fresh and current is not None and current["state"] != SessionState.OPEN:
        raise conflict(f"The session has ended ({current['state']}); it takes no more events.")
    return IngestPlan(fresh, duplicates, _session_write(current, fresh, now, interval))


def _read_index(
    project_id: str, session_id: str, head: IndexHead | None, now: datetime
) -> list[Generation]:
    """The session's index generations that may hold a live entry, newest first: the head
    as read, then its sealed generations (a second round trip, only for a session that
    has filled one)."""
    generations = [Generation(head["entries"])] if head is not None else []
    sealed = [
        store.index_generation(project_id, session_id, generation["id"])
        for generation in live_sealed(head, now)
    ]
    if sealed:
        snapshots = read_all(sealed)
        for ref in sealed:
            data = data_as(snapshots[ref.path], IndexGeneration)
            if data is not None:
                generations.append(Generation(data["entries"]))
    return generations


def ingest_events(call: Call) -> Reply:
    params, events = call.params_as(SessionParams), call.body_as(EventsRequest)["events"]
    _check_data_sizes(events)
    accepted, duplicates = ingest(params["projectId"], params["sessionId"], events)
    return Reply({"accepted": accepted, "duplicates": duplicates})


def ingest(project_id: str, session_id: str, events: list[Event]) -> tuple[int, int]:
    """Store a batch of at most 500 valid events, each once, in one batched read (the
    session and its index head) and one commit: the new events in chunks, their entries
    in the index head, and the batch counted on the session by server-side transforms.
    The head is written only if it is still as read, so overlapping batches into one
    session take turns: a batch that lost its turn reads again and counts what the other
    stored as duplicates. (accepted, duplicates)."""
    batch, repeats = _unique_in_batch(events)
    session = store.session_ref(project_id, session_id)
    head_ref = store.index_head(project_id, session_id)
    retention = timedelta(hours=settings().psychologist_event_retention_hours)

    def plan(writes: firestore.WriteBatch) -> tuple[int, int]:
        snapshots = read_all([session, head_ref])
        held, head_read = snapshots[session.path], snapshots[head_ref.path]
        head = data_as(head_read, IndexHead)
        now = utcnow()
        generations = _read_index(project_id, session_id, head, now)
        decided = plan_ingest(
            data_as(held, Session),
            batch,
            look_up(generations, batch, now),
            repeats,
            now,
            heartbeat_interval(),
        )
        if not decided.fresh:
            return 0, decided.duplicates
        expires = now + retention
        added = _store_chunks(writes, project_id, session_id, decided.fresh, expires)
        index = plan_index(head, added, now, expires)
        if index.sealed is not None:
            generation_id, generation = index.sealed
            ref = store.index_generation(project_id, session_id, generation_id)
            writes.create(ref, writable(generation))
        write_if_unchanged(writes, head_read, writable(index.head))
        if decided.session is not None and decided.session.create:
            writes.create(session, decided.session.changes)
        elif decided.session is not None:
            writes.update(session, decided.session.changes)
        return len(decided.fresh), decided.duplicates

    return commit_if_unchanged(plan)


def _store_chunks(
    writes: firestore.WriteBatch,
    project_id: str,
    session_id: str,
    fresh: list[Event],
    expires: datetime,
) -> bytes:
    """Create the chunks that hold the batch's new events; their packed index entries."""
    added: list[bytes] = []
    for grouped in event_chunks(fresh):
        chunk_id = new_chunk_id()
        encoded = ",".join(text for _, text in grouped)
        chunk: EventChunk = {"events_json": f"[{encoded}]", "expires_at": expires}
        writes.create(
            store.event_chunks(project_id, session_id).document(chunk_id), writable(chunk)
        )
        added.extend(
            entry(event, chunk_id, position, expires) for position, (event, _) in enumerate(grouped)
        )
    return b"".join(added)


def _session_write(
    current: Session | None, fresh: list[Event], now: datetime, interval: timedelta
) -> SessionWrite | None:
    """Create the session with its first batch; later batches change it only by
    transforms (count, agents, first and last event time), and move `last_seen_at` at
    most once per heartbeat `interval`."""
    if current is not None and not fresh:
        return None
    micros = [to_micros(parse_instant(event["at"])) for event in fresh]
    agents = sorted({event["agent"] for event in fresh})
    if current is None:
        created: Session = {
            "state": SessionState.OPEN,
            "agents": agents,
            "event_count": len(fresh),
            "created_at": now,
            "last_seen_at": now,
        }
        if micros:
            created["first_event_micros"] = min(micros)
            created["last_event_micros"] = max(micros)
        return SessionWrite(create=True, changes=writable(created))
    changes: Changes = {
        "event_count": firestore.Increment(len(fresh)),
        "agents": firestore.ArrayUnion(agents),
        "first_event_micros": firestore.Minimum(min(micros)),
        "last_event_micros": firestore.Maximum(max(micros)),
    }
    if current.get("last_seen_at", now) <= now - interval:
        changes["last_seen_at"] = now
    return SessionWrite(create=False, changes=changes)


def heartbeat_interval() -> timedelta:
    """How stale `last_seen_at` may be: a tenth of the heartbeat timeout, which the sweep
    adds to the silence it waits for, so that no session ends before it was silent for
    the whole timeout."""
    return timedelta(seconds=settings().psychologist_heartbeat_timeout_s / 10)


def _new_analysis(
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
) -> Session:
    """End an open session and, in the same transaction, queue its analysis: an abnormal
    end's asks Gemini; a normal end's only counts the log's signals into the session's
    outcomes, which the effect of an accepted suggestion compares."""
    changes: Changes = {"state": state, "cause": cause, "ended_at": utcnow()}
    abnormal = state == SessionState.CLOSED_ABNORMALLY
    trigger = AnalysisTrigger.ABNORMAL_END if abnormal else AnalysisTrigger.SESSION_END
    analysis_id, analysis = _new_analysis(project_id, session_id, trigger, None)
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


def end(project_id: str, session_id: str, state: str, cause: str | None) -> Ended:
    """End the session when it is open (404 when it does not exist); an ended session is
    left as it is."""
    session = store.session_ref(project_id, session_id)

    def apply(transaction: firestore.Transaction) -> Ended:
        current = read_as(session, Session, transaction)
        if current is None:
            raise not_found("The session")
        if current["state"] != SessionState.OPEN:
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
        if _end_if_still_silent(ref, cutoff)
    ]
    return [ref.id for ref in ended], jobs.sweep(LIFECYCLE, jobs.SWEEP_BATCH)


def _end_if_still_silent(session: firestore.DocumentReference, cutoff: datetime) -> bool:
    project_id = session.parent.parent.id

    def apply(transaction: firestore.Transaction) -> bool:
        current = read_as(session, Session, transaction)
        if (
            current is None
            or current["state"] != SessionState.OPEN
            or current.get("last_seen_at", cutoff) >= cutoff
        ):
            return False
        close_session(
            transaction,
            project_id,
            session.id,
            SessionState.CLOSED_ABNORMALLY,
            "heartbeat_timeout",
            current,
        )
        return True

    return transact(apply)


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
        _, analysis = _new_analysis(
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
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            "pageToken is not a token this endpoint returned.",
            issues=[{"path": ["pageToken"], "message": "Unknown page token", "code": "custom"}],
        ) from error


def _page_token(last: Hypothesis) -> str:
    raw = json.dumps([last["createdAt"].isoformat(), last["id"]]).encode()
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
    headers = {"X-Next-Page-Token": _page_token(page[-1])} if len(found) > limit else {}
    return Reply([hypothesis_view(data) for data in shown], headers=headers)


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
    indexed = look_up(_read_index(project_id, session_id, head, now), ids, now)
    chunks = _chunks_of(project_id, session_id, indexed.values(), now)
    found: list[Event] = []
    for event_id in ids:
        event = _event_of(indexed[event_id], chunks)
        if event is not None and event["id"] == event_id:
            found.append(event)
    returned = {event["id"] for event in found}
    missing = [event_id for event_id in ids if event_id not in returned]
    return Reply({"events": found, "missing": missing})


def _chunks_of(
    project_id: str,
    session_id: str,
    indexed: Iterable[Indexed | None],
    now: datetime,
) -> dict[str, list[Event]]:
    """The retained chunks that hold `indexed` events, decoded, read in one round trip."""
    collection = store.event_chunks(project_id, session_id)
    names = sorted({entry.chunk for entry in indexed if entry is not None})
    chunks: dict[str, list[Event]] = {}
    for snapshot in read_all([collection.document(name) for name in names]).values():
        data = data_as(snapshot, EventChunk)
        if data is not None and not is_expired(data, now):
            chunks[snapshot.id] = json.loads(data["events_json"])
    return chunks


def _event_of(indexed: Indexed | None, chunks: dict[str, list[Event]]) -> Event | None:
    """An event from its chunk (None when the event or its chunk is gone)."""
    if indexed is None:
        return None
    chunk = chunks.get(indexed.chunk)
    return chunk[indexed.position] if chunk is not None else None
