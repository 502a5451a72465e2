"""Storing a session's events, from the events endpoint or from an OTLP export: each
event once, in chunks that the analysis reads whole, indexed by id in a few packed
documents (`event_index.py`), the session counted by server-side transforms. A telemetry
session also keeps its turns, tool errors and usage, and a second report of one call is
merged into the event of the first."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from google.cloud import firestore

from functions.psychologist import store
from functions.psychologist.documents import (
    Event,
    EventChunk,
    IndexGeneration,
    IndexHead,
    Session,
    SessionState,
    SessionUsage,
    Turns,
)
from functions.psychologist.requests import EventsRequest, SessionParams
from functions.psychologist.signals import TOOL_ERROR, tool_errors
from functions.psychologist.telemetry.event_index import (
    Generation,
    Indexed,
    body_key,
    entry,
    live_sealed,
    look_up,
    new_chunk_id,
    plan_index,
)
from functions.psychologist.telemetry.reports import (
    USAGE_FIELDS,
    USAGE_KEYS,
    Turn,
    failed,
    merged,
    usage_of,
)
from shared.errors import ApiError, ErrorCode, Issue, conflict
from shared.http import Call, Reply
from shared.instance import settings
from shared.retention import is_expired, parse_instant, to_micros, utcnow
from shared.store import (
    Changes,
    commit_if_unchanged,
    data_as,
    read_all,
    unchanged_since,
    writable,
    write_if_unchanged,
)

MAX_DATA_BYTES = 8 * 1024
CHUNK_BYTES = 800_000
TURNS_KEPT = 50
"""Closed turn ids a session remembers, so that a late span of a closed turn does not
open it again; and the most open turns it tracks."""


@dataclass(frozen=True)
class Telemetry:
    """What an export says of a session beyond its events."""

    source: str
    mergeable: frozenset[str] = frozenset()
    """The ids of events another report of the same call may have stored first."""
    turns: tuple[Turn, ...] = ()


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
class Replaced:
    """A stored event and the merged event that takes its place."""

    stored: Event
    merged: Event


@dataclass(frozen=True)
class IngestPlan:
    fresh: list[Event]
    """The batch's events to store, in the order sent."""
    duplicates: int
    session: SessionWrite | None
    """None when the session exists and the batch brought nothing new."""
    replaced: list[Replaced] = field(default_factory=list)


def plan_ingest(  # noqa: PLR0913 - the decision's inputs, each read once by `ingest`
    current: Session | None,
    batch: dict[str, Event],
    known: dict[str, Indexed | None],
    repeats: int,
    now: datetime,
    interval: timedelta,
    *,
    telemetry: Telemetry | None = None,
    stored: dict[str, Event] | None = None,
) -> IngestPlan:
    """A batch's decision from the session and what the event index holds of its events
    (by event id, None when absent): an event indexed and not expired is a duplicate when
    its body is the same and a conflict when it is not, unless it is mergeable, whose
    `stored` report is merged with it (a duplicate when the merge changes nothing); an
    expired one is received anew; a session its agent or launcher ended takes no event after
    its end (a replayed batch is still answered), and one that silence ended is reopened by
    any new record."""
    fresh: list[Event] = []
    replaced: list[Replaced] = []
    duplicates = repeats
    mergeable = telemetry.mergeable if telemetry is not None else frozenset()
    for event_id, event in batch.items():
        indexed = known.get(event_id)
        if indexed is None or indexed.expires_at <= now:
            fresh.append(event)
        elif indexed.body == body_key(event):
            duplicates += 1
        elif event_id in mergeable and stored is not None and event_id in stored:
            combined = merged(stored[event_id], event)
            if body_key(combined) == indexed.body:
                duplicates += 1
            else:
                replaced.append(Replaced(stored[event_id], combined))
        else:
            raise conflict(f"Event {event_id} was already received with a different body.")
    written = fresh + [change.merged for change in replaced]
    resumes = False
    if current is not None and current["state"] != SessionState.OPEN:
        resumes = bool(current.get("ended_by_silence"))
        if not resumes:
            _check_before_end(current, written)
    write = _session_write(current, fresh, replaced, now, interval, telemetry)
    if write is not None and resumes:
        write.changes.update(RESUMED | {"last_seen_at": now})
    return IngestPlan(fresh, duplicates, write, replaced)


RESUMED: Changes = {
    "state": SessionState.OPEN,
    "cause": None,
    "ended_at": firestore.DELETE_FIELD,
    "ended_by_silence": False,
    "analysis_id": None,
    "resumed": firestore.Increment(1),
}
"""A session that silence had ended, spoken to again: open until it falls silent again,
when it is judged anew on its whole log."""


def _check_before_end(ended: Session, written: list[Event]) -> None:
    """An ended session keeps what arrives late but happened before its end (an agent's
    last telemetry, flushed as it exits); anything after its end is refused."""
    end = ended.get("ended_at")
    if any(end is None or parse_instant(event["at"]) > end for event in written):
        raise conflict(
            f"The session has ended ({ended['state']}); it takes no events after its end."
        )


def read_index(
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


def ingest(
    project_id: str, session_id: str, events: list[Event], telemetry: Telemetry | None = None
) -> tuple[int, int]:
    """Store a batch of at most 500 valid events, each once, in one batched read (the
    session and its index head) and one commit: the new events in chunks, their entries
    in the index head, and the batch counted on the session by server-side transforms.
    A mergeable event already stored with another body costs one more read, of the
    chunks that hold it. The head is written only if it is still as read, so overlapping
    batches into one session take turns: a batch that lost its turn reads again and
    counts what the other stored as duplicates. (accepted, duplicates): a merge is
    accepted, though it adds no event."""
    batch, repeats = _unique_in_batch(events)
    session = store.session_ref(project_id, session_id)
    head_ref = store.index_head(project_id, session_id)
    retention = timedelta(hours=settings().psychologist_event_retention_hours)

    def plan(writes: firestore.WriteBatch) -> tuple[int, int]:
        snapshots = read_all([session, head_ref])
        held, head_read = snapshots[session.path], snapshots[head_ref.path]
        head = data_as(head_read, IndexHead)
        now = utcnow()
        known = look_up(read_index(project_id, session_id, head, now), batch, now)
        decided = plan_ingest(
            data_as(held, Session),
            batch,
            known,
            repeats,
            now,
            heartbeat_interval(),
            telemetry=telemetry,
            stored=_stored_reports(project_id, session_id, batch, known, telemetry, now),
        )
        written = decided.fresh + [replaced.merged for replaced in decided.replaced]
        if not written:
            return 0, decided.duplicates
        expires = now + retention
        added = _store_chunks(writes, project_id, session_id, written, expires)
        index = plan_index(head, added, now, expires)
        if index.sealed is not None:
            generation_id, generation = index.sealed
            ref = store.index_generation(project_id, session_id, generation_id)
            writes.create(ref, writable(generation))
        write_if_unchanged(writes, head_read, writable(index.head))
        if decided.session is not None and decided.session.create:
            writes.create(session, decided.session.changes)
        elif decided.session is not None:
            # as read: an end by the sweep or the agent that came after this read is never
            # overwritten, nor followed by events the batch judged against an open session
            writes.update(session, decided.session.changes, option=unchanged_since(held))
        return len(written), decided.duplicates

    return commit_if_unchanged(plan)


def _stored_reports(
    project_id: str,
    session_id: str,
    batch: dict[str, Event],
    known: dict[str, Indexed | None],
    telemetry: Telemetry | None,
    now: datetime,
) -> dict[str, Event]:
    """The stored events that mergeable events of the batch may merge with, by id: the
    chunks holding them read in one round trip (none when there are none)."""
    if telemetry is None:
        return {}
    wanted = {
        event_id: indexed
        for event_id, indexed in known.items()
        if indexed is not None
        and indexed.expires_at > now
        and event_id in telemetry.mergeable
        and indexed.body != body_key(batch[event_id])
    }
    chunks = chunks_of(project_id, session_id, wanted.values(), now)
    found: dict[str, Event] = {}
    for event_id, indexed in wanted.items():
        event = event_of(indexed, chunks)
        if event is not None and event["id"] == event_id:
            found[event_id] = event
    return found


def chunks_of(
    project_id: str, session_id: str, indexed: Iterable[Indexed | None], now: datetime
) -> dict[str, list[Event]]:
    """The retained chunks that hold `indexed` events, decoded, read in one round trip."""
    collection = store.event_chunks(project_id, session_id)
    names = sorted({entry.chunk for entry in indexed if entry is not None})
    if not names:
        return {}
    chunks: dict[str, list[Event]] = {}
    for snapshot in read_all([collection.document(name) for name in names]).values():
        data = data_as(snapshot, EventChunk)
        if data is not None and not is_expired(data, now):
            chunks[snapshot.id] = json.loads(data["events_json"])
    return chunks


def event_of(indexed: Indexed | None, chunks: dict[str, list[Event]]) -> Event | None:
    """An event from its chunk (None when the event or its chunk is gone)."""
    if indexed is None:
        return None
    chunk = chunks.get(indexed.chunk)
    return chunk[indexed.position] if chunk is not None else None


def latest_versions(events: Iterable[Event]) -> list[Event]:
    """The log with each merged event once: a call reported again is stored again, and
    its versions merge into the latest (a version never loses what an earlier said)."""
    by_id: dict[str, Event] = {}
    for event in events:
        earlier = by_id.get(event["id"])
        by_id[event["id"]] = (
            event if earlier is None or earlier == event else merged(earlier, event)
        )
    return list(by_id.values())


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
    current: Session | None,
    fresh: list[Event],
    replaced: list[Replaced],
    now: datetime,
    interval: timedelta,
    telemetry: Telemetry | None,
) -> SessionWrite | None:
    """Create the session with its first batch; later batches change it only by
    transforms (count, agents, first and last event time), and move `last_seen_at` at
    most once per heartbeat `interval`. Every batch counts its tool errors; a telemetry
    batch also counts usage, and sets the turns as the batch leaves them."""
    if current is not None and not fresh and not replaced:
        return None
    written = fresh + [change.merged for change in replaced]
    micros = [to_micros(parse_instant(event["at"])) for event in written]
    agents = sorted({event["agent"] for event in written})
    if current is None:
        created: Session = {
            "state": SessionState.OPEN,
            "agents": agents,
            "event_count": len(fresh),
            "created_at": now,
            "last_seen_at": now,
            "tool_errors": _tool_errors_added(fresh, replaced),
        }
        if micros:
            created["first_event_micros"] = min(micros)
            created["last_event_micros"] = max(micros)
        if telemetry is not None:
            created["source"] = telemetry.source
            created["turns"] = turns_after(None, telemetry.turns)
            created["usage"] = _usage_added(fresh, replaced, "usage")
            created["metered"] = _usage_added(fresh, replaced, "metered")
        return SessionWrite(create=True, changes=writable(created))
    changes: Changes = {
        "event_count": firestore.Increment(len(fresh)),
        "agents": firestore.ArrayUnion(agents),
        "first_event_micros": firestore.Minimum(min(micros)),
        "last_event_micros": firestore.Maximum(max(micros)),
    }
    if current.get("last_seen_at", now) <= now - interval:
        changes["last_seen_at"] = now
    errors = _tool_errors_added(fresh, replaced)
    if errors:
        changes["tool_errors"] = firestore.Increment(errors)
    if telemetry is not None:
        changes.update(_telemetry_changes(current, fresh, replaced, telemetry))
    return SessionWrite(create=False, changes=changes)


def _telemetry_changes(
    current: Session, fresh: list[Event], replaced: list[Replaced], telemetry: Telemetry
) -> Changes:
    changes: Changes = {"turns": turns_after(current.get("turns"), telemetry.turns)}
    if "source" not in current:
        changes["source"] = telemetry.source
    for key in USAGE_KEYS:
        for name, amount in _usage_added(fresh, replaced, key).items():
            changes[f"{key}.{name}"] = firestore.Increment(amount)
    return changes


def _tool_errors_added(fresh: list[Event], replaced: list[Replaced]) -> int:
    turned = sum(
        1
        for change in replaced
        if change.merged["type"] == TOOL_ERROR and not failed(change.stored)
    )
    return tool_errors(fresh) + turned


def _usage_added(fresh: list[Event], replaced: list[Replaced], key: str) -> SessionUsage:
    """Each request's tokens and cost once: a merged report adds only what it raised."""
    added: dict[str, float] = {}
    for event in fresh:
        for name, value in usage_of(event, key).items():
            added[name] = added.get(name, 0) + value
    for change in replaced:
        before = usage_of(change.stored, key)
        for name, value in usage_of(change.merged, key).items():
            raised = value - before.get(name, 0)
            if raised:
                added[name] = added.get(name, 0) + raised
    return {name: added[name] for name in USAGE_FIELDS if added.get(name)}


def turns_after(current: Turns | None, marks: Iterable[Turn]) -> Turns:
    """The session's turns once `marks` are applied, in order: a record of a turn not
    seen before opens it, its root span closes it (recording whether it failed), and a
    late record of a closed turn opens nothing."""
    opened = list(current["open"]) if current is not None else []
    closed = list(current["closed"]) if current is not None else []
    last = current["last"] if current is not None else None
    for mark in marks:
        if mark.ends:
            if mark.id in opened:
                opened.remove(mark.id)
            if mark.id not in closed:
                closed = [*closed, mark.id][-TURNS_KEPT:]
            last = {"id": mark.id, "failed": mark.failed}
        elif mark.id not in closed and mark.id not in opened:
            opened = [*opened, mark.id][-TURNS_KEPT:]
    return {"open": opened, "closed": closed, "last": last}


def heartbeat_interval() -> timedelta:
    """How stale `last_seen_at` may be: a tenth of the heartbeat timeout, which the sweep
    adds to the silence it waits for, so that no session ends before it was silent for
    the whole timeout."""
    return timedelta(seconds=settings().psychologist_heartbeat_timeout_s / 10)
