"""OpenTelemetry spans as session events, read through the table of sources
(`sources.py`): which attribute names the session and the agent, what kind of event a
span is, what is kept of it, and the turn it belongs to (a trace is one turn, closed by
its root span). `docs/otlp.md` is the table of it."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
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
)
from functions.psychologist.telemetry.reports import Report, Reports, Turn, call_event_id
from functions.psychologist.telemetry.sources import (
    CALL_ID_ATTRIBUTES,
    OPENINFERENCE_KINDS,
    OPERATION_KINDS,
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

TRACE_ID_BYTES, SPAN_ID_BYTES = 16, 8
_TYPE_PART = re.compile(r"[^a-z0-9_]")

OPERATION_TYPES = {
    "invoke_agent": "agent.invoke",
    "invoke_workflow": "agent.workflow",
    "create_agent": "agent.create",
    "execute_tool": "tool.call",
    "chat": "model.chat",
    "text_completion": "model.completion",
    "generate_content": "model.generate",
    "embeddings": "model.embeddings",
}
"""`gen_ai.operation.name` → event type; a span in error gets `.error` in place of the
verb (`tool.error`, which the repeated-tool-error signal counts)."""
KIND_TYPES = {Kind.TOOL: "tool.call", Kind.MODEL: "model.chat", Kind.TURN: "agent.invoke"}
"""The type of a span whose source names its kind but not its operation."""


def event_id(trace_id: bytes, span_id: bytes, ended: datetime) -> str:
    """A ULID that is the same for the same span whenever it is sent: its time is the
    span's end, its randomness a hash of the trace and span ids."""
    millis = int(ended.timestamp() * 1000)
    digest = hashlib.blake2b(trace_id + span_id, digest_size=10).digest()
    return str(ULID.from_bytes(millis.to_bytes(6, "big") + digest))


def kind_of(source: Source, span: Span, attributes: dict[str, Any]) -> Kind:
    """What the span reports: by the source's own span names, else by the operation or
    OpenInference's span kind. A turn only as a root span."""
    found = (
        source.spans.get(span.name)
        or OPERATION_KINDS.get(str(attributes.get("gen_ai.operation.name") or ""))
        or OPENINFERENCE_KINDS.get(str(attributes.get("openinference.span.kind") or ""))
        or Kind.OTHER
    )
    if found == Kind.TURN and span.parent_span_id:
        return Kind.OTHER
    return found


def type_of(attributes: dict[str, Any], kind: Kind, failed: bool) -> str:
    operation = str(attributes.get("gen_ai.operation.name") or "")
    known = OPERATION_TYPES.get(operation) or KIND_TYPES.get(kind)
    if failed:
        noun = known.split(".")[0] if known is not None else "span"
        return f"{noun}.error"
    if known is not None:
        return known
    verb = _TYPE_PART.sub("_", operation.lower()).strip("_")[:40]
    return f"span.{verb}" if verb and verb[0].isalpha() else "span.ended"


def _status_error(span: Span, attributes: dict[str, Any]) -> str | None:
    if span.status.code != Status.STATUS_CODE_ERROR:
        return None
    return (span.status.message or str(attributes.get("error.type") or "error"))[:500]


def _described(span: Span, started: datetime, ended: datetime) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": span.name[:200],
        "traceId": span.trace_id.hex(),
        "spanId": span.span_id.hex(),
        "kind": Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_").lower(),
        "durationMs": round((ended - started).total_seconds() * 1000, 3),
        "status": Status.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_").lower(),
    }
    if span.parent_span_id:
        described["parentSpanId"] = span.parent_span_id.hex()
    return described


@dataclass(frozen=True)
class _Read:
    """A span as its source's row reads it."""

    source: Source
    kind: Kind
    call_id: str | None
    error: str | None


def _data(
    span: Span, attributes: dict[str, Any], read: _Read, times: tuple[datetime, datetime]
) -> Any:
    found, dropped = kept(attributes)
    data: dict[str, Any] = {"span": _described(span, *times), "attributes": found}
    if dropped:
        data["droppedAttributes"] = dropped
    tool = first_of(attributes, TOOL_NAME_ATTRIBUTES)
    if tool and read.kind == Kind.TOOL:
        data["tool"] = tool
    if read.error is not None:
        data["error"] = read.error
    usage = usage_from(attributes) if read.kind == Kind.MODEL else {}
    if usage:
        data["usage"] = usage
    if read.call_id is not None:
        data["callId"] = read.call_id
        data["reports"] = {
            f"span:{span.span_id.hex()}": {
                "name": span.name[:200],
                "status": data["span"]["status"],
            }
        }
    return fitted(data)


@dataclass
class _Traces:
    """What any span of a trace in the export says, for the spans of it that do not say
    it themselves: the session, the agent, and the call id of each span that names one."""

    sessions: dict[bytes, str]
    agents: dict[bytes, str]
    calls: dict[bytes, str]
    """Span id → call id: a child span without its own (an execution or a wait inside a
    tool call) reports that call."""


def _traces(request: ExportTraceServiceRequest) -> _Traces:
    traces = _Traces({}, {}, {})
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attributes = attributes_of(span.attributes)
                source = source_of(resource, scope_spans.scope.name, attributes)
                session = session_id_of(source, attributes)
                if session is not None:
                    traces.sessions.setdefault(span.trace_id, session)
                agent = agent_of(attributes, resource)
                if agent is not None:
                    traces.agents.setdefault(span.trace_id, agent)
                call = first_of(attributes, CALL_ID_ATTRIBUTES)
                if call is not None:
                    traces.calls[span.span_id] = call
    return traces


def _refusal(span: Span) -> str | None:
    if len(span.trace_id) != TRACE_ID_BYTES or not any(span.trace_id):
        return "no valid trace id"
    if len(span.span_id) != SPAN_ID_BYTES or not any(span.span_id):
        return "no valid span id"
    if span.end_time_unix_nano == 0 or span.end_time_unix_nano < span.start_time_unix_nano:
        return "no end time, or an end before the start"
    if instant(span.end_time_unix_nano) > LATEST:
        return "an end time after 2999"
    return None


def _read(source: Source, span: Span, attributes: dict[str, Any], calls: dict[bytes, str]) -> _Read:
    kind = kind_of(source, span, attributes)
    call_id: str | None = None
    if kind == Kind.TOOL:
        call_id = calls.get(span.span_id)
    elif kind == Kind.MODEL:
        call_id = first_of(attributes, REQUEST_ID_ATTRIBUTES)
    elif span.parent_span_id in calls:
        kind, call_id = Kind.TOOL, calls[span.parent_span_id]
    status_error = _status_error(span, attributes)
    error = tool_failure(attributes, status_error) if kind == Kind.TOOL else status_error
    return _Read(source, kind, call_id, error)


def _report(
    span: Span, resource: dict[str, Any], scope: str, traces: _Traces
) -> tuple[Report, str] | str:
    """The span's report and its source's name, or why it cannot be one."""
    refused = _refusal(span)
    if refused is not None:
        return refused
    attributes = attributes_of(span.attributes)
    source = source_of(resource, scope, attributes)
    agent = agent_of(attributes, resource) or traces.agents.get(span.trace_id)
    if agent is None:
        return "no gen_ai.agent.name and no service.name"
    read = _read(source, span, attributes, traces.calls)
    started, ended = instant(span.start_time_unix_nano), instant(span.end_time_unix_nano)
    kind_key = "tool" if read.kind == Kind.TOOL else "request"
    event: Event = {
        "id": event_id(span.trace_id, span.span_id, ended)
        if read.call_id is None
        else call_event_id(kind_key, read.call_id),
        "agent": agent,
        "type": type_of(attributes, read.kind, read.error is not None),
        "at": rfc3339(ended),
        "taskId": span.trace_id.hex(),
        "data": _data(span, attributes, read, (started, ended)),
    }
    session = (
        session_id_of(source, attributes)
        or traces.sessions.get(span.trace_id)
        or span.trace_id.hex()
    )
    root = not span.parent_span_id
    turn = Turn(
        span.trace_id.hex(), ends=root, failed=root and span.status.code == Status.STATUS_CODE_ERROR
    )
    return Report(session, event, mergeable=read.call_id is not None, turn=turn), source.name


def map_spans(request: ExportTraceServiceRequest) -> Reports:
    """Every span of the export as an event of its session, reports of one call merged."""
    reports = Reports()
    traces = _traces(request)
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found = _report(span, resource, scope_spans.scope.name, traces)
                if isinstance(found, str):
                    reports.reject(found)
                else:
                    reports.add(*found)
    return reports
