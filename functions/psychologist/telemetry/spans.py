"""OpenTelemetry spans as session events, read through the table of sources
(`sources.py`): which attribute names the session and the agent, what kind of event a
span is, what is kept of it, and the turn it belongs to (a trace is one turn, closed by
its root span). `docs/otlp.md` is the table of it."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from ulid import ULID

from functions.psychologist.telemetry.records import (
    LATEST,
    Placed,
    Read,
    agent_of,
    attributes_of,
    instant,
    report_of,
    walk,
)
from functions.psychologist.telemetry.reports import Report, Reports, Turn
from functions.psychologist.telemetry.sources import (
    Attributes,
    Kind,
    Signal,
    Source,
    first_of,
    session_id_of,
    source_of,
    span_kind,
    tool_failure,
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


def type_of(attributes: Attributes, kind: Kind, failed: bool) -> str:
    operation = str(attributes.get("gen_ai.operation.name") or "")
    known = OPERATION_TYPES.get(operation) or KIND_TYPES.get(kind)
    if failed:
        noun = known.split(".")[0] if known is not None else "span"
        return f"{noun}.error"
    if known is not None:
        return known
    verb = _TYPE_PART.sub("_", operation.lower()).strip("_")[:40]
    return f"span.{verb}" if verb and verb[0].isalpha() else "span.ended"


def _status_error(span: Span, attributes: Attributes) -> str | None:
    if span.status.code != Status.STATUS_CODE_ERROR:
        return None
    return (span.status.message or str(attributes.get("error.type") or "error"))[:500]


def _described(span: Span, started: datetime, ended: datetime) -> Attributes:
    described: Attributes = {
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
    for placed in walk(request, Signal.TRACES):
        span: Span = placed.record
        attributes = attributes_of(span.attributes)
        source = source_of(placed.resource, placed.scope, attributes)
        session = session_id_of(source, attributes)
        if session is not None:
            traces.sessions.setdefault(span.trace_id, session)
        agent = agent_of(source, attributes, placed.resource)
        if agent is not None:
            traces.agents.setdefault(span.trace_id, agent)
        call = first_of(attributes, source.call_ids)
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


def _read(source: Source, span: Span, attributes: Attributes, traces: _Traces) -> _Kind:
    """What the span reports (a child of a tool call without a call id of its own reports
    that call), the call it reports, and its error."""
    kind = span_kind(source, span.name, attributes, root=not span.parent_span_id)
    call_id: str | None = None
    if kind == Kind.TOOL:
        call_id = traces.calls.get(span.span_id)
    elif kind == Kind.MODEL:
        call_id = first_of(attributes, source.request_ids)
    elif kind != Kind.DROPPED and span.parent_span_id in traces.calls:
        kind, call_id = Kind.TOOL, traces.calls[span.parent_span_id]
    status_error = _status_error(span, attributes)
    error = tool_failure(source, attributes, status_error) if kind == Kind.TOOL else status_error
    return _Kind(kind, call_id, error)


@dataclass(frozen=True)
class _Kind:
    kind: Kind
    call_id: str | None
    error: str | None


def _report(placed: Placed, traces: _Traces) -> tuple[Report, str] | str:
    """The span's report and its source's name, or why it cannot be one."""
    span: Span = placed.record
    refused = _refusal(span)
    if refused is not None:
        return refused
    attributes = attributes_of(span.attributes)
    source = source_of(placed.resource, placed.scope, attributes)
    agent = agent_of(source, attributes, placed.resource) or traces.agents.get(span.trace_id)
    if agent is None:
        return "no gen_ai.agent.name and no service.name"
    read = _read(source, span, attributes, traces)
    if read.kind == Kind.DROPPED:
        return f"a {source.name} span that is no turn, tool run or model request"
    started, ended = instant(span.start_time_unix_nano), instant(span.end_time_unix_nano)
    described = _described(span, started, ended)
    session = (
        session_id_of(source, attributes)
        or traces.sessions.get(span.trace_id)
        or span.trace_id.hex()
    )
    turn = None
    if source.turns is not None:
        ends = source.turns.closes(span.name, root=not span.parent_span_id)
        failed = ends and span.status.code == Status.STATUS_CODE_ERROR
        turn = Turn(span.trace_id.hex(), ends=ends, failed=failed)
    return report_of(
        Read(
            source=source,
            session=session,
            agent=agent,
            kind=read.kind,
            type=type_of(attributes, read.kind, read.error is not None),
            at=ended,
            attributes=attributes,
            described=("span", described),
            own_id=event_id(span.trace_id, span.span_id, ended),
            report=(
                f"span:{span.span_id.hex()}",
                {"name": span.name[:200], "status": described["status"]},
            ),
            call_id=read.call_id,
            error=read.error,
            task=span.trace_id.hex(),
            turn=turn,
        )
    ), source.name


def map_spans(request: ExportTraceServiceRequest) -> Reports:
    """Every span of the export as an event of its session, reports of one call merged;
    the spans the row drops, and those that cannot be events, counted as rejected."""
    reports = Reports()
    traces = _traces(request)
    for placed in walk(request, Signal.TRACES):
        found = _report(placed, traces)
        if isinstance(found, str):
            reports.reject(found)
        else:
            reports.add(*found)
    return reports
