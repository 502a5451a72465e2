"""OpenTelemetry log records as session events, read through the table of sources: the
event a record names (`event_name`, else its `event.name` attribute, else its body), the
session, the kind of event it is, a tool's failure and a request's tokens and cost. A
record reporting a call another record reported shares its event (merged by call id)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from ulid import ULID

from functions.psychologist.documents import Event
from functions.psychologist.telemetry.records import (
    LATEST,
    agent_of,
    attributes_of,
    fitted,
    instant,
    kept,
    rfc3339,
    value_of,
)
from functions.psychologist.telemetry.reports import Report, Reports, call_event_id
from functions.psychologist.telemetry.sources import (
    CALL_ID_ATTRIBUTES,
    REQUEST_ID_ATTRIBUTES,
    TOOL_NAME_ATTRIBUTES,
    Kind,
    Source,
    first_of,
    session_id_of,
    source_of,
    tool_failure,
    usage_from,
)

_TYPE_PART = re.compile(r"[^a-z0-9_]")
TASK_ATTRIBUTES = ("prompt.id", "prompt_id")
"""A log record's task: the prompt it belongs to."""
KIND_TYPES = {Kind.TOOL: "tool.call", Kind.MODEL: "model.chat", Kind.PROMPT: "prompt.submitted"}


def name_of(record: LogRecord, attributes: dict[str, Any], source: Source) -> str:
    body = value_of(record.body)
    named = (
        record.event_name or attributes.get("event.name") or (body if isinstance(body, str) else "")
    )
    return str(named).removeprefix(source.event_prefix)[:100]


def record_id(session: str, name: str, record: LogRecord, attributes: dict[str, Any]) -> str:
    """A ULID that is the same for the same record whenever it is sent: its time is the
    record's, its randomness a hash of what identifies it."""
    nanos = record.time_unix_nano or record.observed_time_unix_nano
    sequence = attributes.get("event.sequence", "")
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


def _report(record: LogRecord, resource: dict[str, Any], scope: str) -> tuple[Report, str] | str:
    nanos = record.time_unix_nano or record.observed_time_unix_nano
    if nanos == 0 or instant(nanos) > LATEST:
        return "no time, or a time after 2999"
    attributes = attributes_of(record.attributes)
    source = source_of(resource, scope, attributes)
    session = session_id_of(source, attributes)
    if session is None:
        return "no session.id and no gen_ai.conversation.id"
    agent = agent_of(attributes, resource)
    if agent is None:
        return "no gen_ai.agent.name and no service.name"
    name = name_of(record, attributes, source)
    kind = source.logs.get(name, Kind.OTHER)
    call_id = {Kind.TOOL: CALL_ID_ATTRIBUTES, Kind.MODEL: REQUEST_ID_ATTRIBUTES}.get(kind)
    call = first_of(attributes, call_id) if call_id is not None else None
    error = tool_failure(attributes, None) if kind == Kind.TOOL else None
    if kind == Kind.MODEL and name.endswith("error"):
        error = first_of(attributes, ("error", "error.message", "status_code")) or name
    found, dropped = kept(attributes)
    data: dict[str, Any] = {"log": {"name": name}, "attributes": found}
    if dropped:
        data["droppedAttributes"] = dropped
    tool = first_of(attributes, TOOL_NAME_ATTRIBUTES)
    if tool and kind == Kind.TOOL:
        data["tool"] = tool
    if error is not None:
        data["error"] = error[:500]
    usage = usage_from(attributes) if kind == Kind.MODEL else {}
    if usage:
        data["usage"] = usage
    if call is not None:
        data["callId"] = call
        data["reports"] = {f"log:{name}": {"name": name, "failed": error is not None}}
    event: Event = {
        "id": record_id(session, name, record, attributes)
        if call is None
        else call_event_id("tool" if kind == Kind.TOOL else "request", call),
        "agent": agent,
        "type": _type(name, kind, error is not None),
        "at": rfc3339(instant(nanos)),
        "data": fitted(data),
    }
    task = first_of(attributes, TASK_ATTRIBUTES) or (
        record.trace_id.hex() if any(record.trace_id) else None
    )
    if task:
        event["taskId"] = task[:128]
    return Report(session, event, mergeable=call is not None), source.name


def map_logs(request: ExportLogsServiceRequest) -> Reports:
    """Every log record of the export as an event of its session, reports of one call merged."""
    reports = Reports()
    for resource_logs in request.resource_logs:
        resource = attributes_of(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                found = _report(record, resource, scope_logs.scope.name)
                if isinstance(found, str):
                    reports.reject(found)
                else:
                    reports.add(*found)
    return reports
