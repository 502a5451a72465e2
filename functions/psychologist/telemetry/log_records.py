"""OpenTelemetry log records as session events, read through the table of sources: the
event a record names (`event_name`, else its `event.name` attribute, else its body), the
session, the kind of event it is, a tool's failure and a request's tokens and cost. A
record reporting a call another record reported shares its event (merged by call id)."""

from __future__ import annotations

import hashlib
import re

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from ulid import ULID

from functions.psychologist.telemetry.records import (
    LATEST,
    Placed,
    Read,
    agent_of,
    attributes_of,
    instant,
    report_of,
    value_of,
    walk,
)
from functions.psychologist.telemetry.reports import Report, Reports, Turn
from functions.psychologist.telemetry.sources import (
    Attributes,
    Kind,
    Signal,
    Source,
    Value,
    first_of,
    log_kind,
    session_id_of,
    source_of,
    tool_failure,
)

_TYPE_PART = re.compile(r"[^a-z0-9_]")
KIND_TYPES = {Kind.TOOL: "tool.call", Kind.MODEL: "model.chat", Kind.PROMPT: "prompt.submitted"}


def name_of(record: LogRecord, attributes: Attributes, source: Source) -> str:
    """The event the record names, where its row says to look first."""
    body = value_of(record.body)
    places: dict[str, Value] = {
        "event_name": record.event_name,
        "body": body if isinstance(body, str) else "",
    }
    for place in source.log_names:
        named = places[place] if place in places else attributes.get(place)
        if named:
            return str(named).removeprefix(source.event_prefix)[:100]
    return ""


def record_id(
    session: str, name: str, record: LogRecord, attributes: Attributes, source: Source
) -> str:
    """A ULID that is the same for the same record whenever it is sent: its time is the
    record's, its randomness a hash of what identifies it."""
    nanos = record.time_unix_nano or record.observed_time_unix_nano
    sequence = attributes.get(source.sequence, "")
    key = (
        f"{session}|{name}|{nanos}|{sequence}|{record.SerializeToString(deterministic=True).hex()}"
    )
    digest = hashlib.blake2b(key.encode(), digest_size=10).digest()
    return str(ULID.from_bytes((nanos // 1_000_000).to_bytes(6, "big") + digest))


def _type(name: str, kind: Kind, failed: bool) -> str:
    known = KIND_TYPES.get(kind)
    if known is not None:
        return known.split(".")[0] + ".error" if failed else known
    verb = _TYPE_PART.sub("_", name.lower()).strip("_")[:40]
    return f"log.{verb}" if verb and verb[0].isalpha() else "log.record"


def _report(placed: Placed) -> tuple[Report, str] | str:
    record: LogRecord = placed.record
    nanos = record.time_unix_nano or record.observed_time_unix_nano
    if nanos == 0 or instant(nanos) > LATEST:
        return "no time, or a time after 2999"
    attributes = attributes_of(record.attributes)
    source = source_of(placed.resource, placed.scope, attributes)
    session = session_id_of(source, attributes)
    if session is None:
        return "no session id (" + ", ".join(source.session_attributes) + ")"
    agent = agent_of(source, attributes, placed.resource)
    if agent is None:
        return "no gen_ai.agent.name and no service.name"
    name = name_of(record, attributes, source)
    kind = log_kind(source, name, attributes)
    if kind == Kind.DROPPED:
        return f"a {source.name} log event that says nothing used ({name})"
    ids = {Kind.TOOL: source.call_ids, Kind.MODEL: source.request_ids}.get(kind)
    call = first_of(attributes, ids) if ids is not None else None
    error = tool_failure(source, attributes, None) if kind == Kind.TOOL else None
    if kind == Kind.MODEL:
        error = source.model_failure.of(name, attributes)
    task = first_of(attributes, source.task_attributes) or (
        record.trace_id.hex() if any(record.trace_id) else None
    )
    return report_of(
        Read(
            source=source,
            session=session,
            agent=agent,
            kind=kind,
            type=_type(name, kind, error is not None),
            at=instant(nanos),
            attributes=attributes,
            described=("log", {"name": name}),
            own_id=record_id(session, name, record, attributes, source),
            report=(f"log:{name}", {"name": name, "failed": error is not None}),
            call_id=call,
            error=error,
            task=task,
            turn=_turn(source, kind, record),
        )
    ), source.name


def _turn(source: Source, kind: Kind, record: LogRecord) -> Turn | None:
    """The turn a prompt, tool call or model request opens, where its row's turns are
    opened by logs naming a trace (a start-up record names a trace that is no turn)."""
    opens = source.turns is not None and source.turns.logs_open and kind != Kind.OTHER
    if not opens or not any(record.trace_id):
        return None
    return Turn(record.trace_id.hex())


def map_logs(request: ExportLogsServiceRequest) -> Reports:
    """Every log record of the export as an event of its session, reports of one call
    merged; those the row drops, and those that cannot be events, counted as rejected."""
    reports = Reports()
    for placed in walk(request, Signal.LOGS):
        found = _report(placed)
        if isinstance(found, str):
            reports.reject(found)
        else:
            reports.add(*found)
    return reports
