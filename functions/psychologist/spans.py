"""OpenTelemetry spans as session events, by the GenAI semantic conventions: which span
attribute names the session, the agent and the event type, what is kept of a span and
how an agent's root span ends its session. `docs/otlp.md` is the table of it."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from ulid import ULID

from functions.psychologist.documents import Event, SessionState

MAX_DATA_BYTES = 8 * 1024
"""As for an event sent to the events endpoint."""
MAX_VALUE_CHARS = 1_000
"""A kept attribute's string value is cut to this many characters (message contents aside)."""
ABNORMAL_CAUSE = "agent_span_error"
TRACE_ID_BYTES, SPAN_ID_BYTES = 16, 8

_SESSION_ID = re.compile(r"^(?!__.*__$)[A-Za-z0-9_-]{1,128}$")
_AGENT_CHAR = re.compile(r"[^A-Za-z0-9_.:-]")
_TYPE_PART = re.compile(r"[^a-z0-9_]")
_LATEST = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)

CONTENT_ATTRIBUTES = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.definitions",
)
"""Message contents: recorded only when the exporter sent them, cut first when the event
would pass its size limit."""

OPERATION_TYPES = {
    "invoke_agent": "agent.invoke",
    "create_agent": "agent.create",
    "execute_tool": "tool.call",
    "chat": "model.chat",
    "text_completion": "model.completion",
    "generate_content": "model.generate",
    "embeddings": "model.embeddings",
}
"""`gen_ai.operation.name` → event type; a span in error gets `.error` in place of the
verb (`tool.error`, which the repeated-tool-error signal counts)."""


@dataclass(frozen=True)
class SpanEvent:
    session_id: str
    event: Event
    ending: str | None
    """The state a root agent span ends its session in, else None."""


@dataclass
class Mapped:
    """An export's spans as events, by session, and the spans that could not be used."""

    events: dict[str, list[Event]] = field(default_factory=lambda: defaultdict(list))
    endings: dict[str, str] = field(default_factory=dict)
    """Session id → the state its root agent span ends it in (an error wins)."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Why spans were not used → how many."""

    def add(self, mapped: SpanEvent) -> None:
        self.events[mapped.session_id].append(mapped.event)
        first = mapped.ending is not None and mapped.session_id not in self.endings
        if first or mapped.ending == SessionState.CLOSED_ABNORMALLY:
            self.endings[mapped.session_id] = str(mapped.ending)

    def reject(self, reason: str, count: int = 1) -> None:
        self.rejected[reason] += count


def value_of(value: AnyValue) -> Any:
    """An attribute value as JSON: bytes as hex, arrays and maps kept."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes_of(attributes: Any) -> dict[str, Any]:
    pairs: list[KeyValue] = list(attributes)
    return {pair.key: value_of(pair.value) for pair in pairs}


def event_id(trace_id: bytes, span_id: bytes, ended: datetime) -> str:
    """A ULID that is the same for the same span whenever it is sent: its time is the
    span's end, its randomness a hash of the trace and span ids."""
    millis = int(ended.timestamp() * 1000)
    digest = hashlib.blake2b(trace_id + span_id, digest_size=10).digest()
    return str(ULID.from_bytes(millis.to_bytes(6, "big") + digest))


def session_of(attributes: dict[str, Any], trace_id: bytes) -> str:
    """`gen_ai.conversation.id` when it is a valid session id, a hash of it when it is
    not, else the trace id in hex."""
    conversation = attributes.get("gen_ai.conversation.id")
    if conversation is None or conversation == "":
        return trace_id.hex()
    text = str(conversation)
    if _SESSION_ID.match(text):
        return text
    return "c-" + hashlib.sha256(text.encode()).hexdigest()[:40]


def agent_of(attributes: dict[str, Any], resource: dict[str, Any]) -> str | None:
    """`gen_ai.agent.name`, else the resource's `service.name`, with every character an
    agent name may not hold made `_` (at most 100)."""
    name = attributes.get("gen_ai.agent.name") or resource.get("service.name")
    if not name:
        return None
    cleaned = _AGENT_CHAR.sub("_", str(name))[:100]
    return cleaned if cleaned[0].isalnum() else "a" + cleaned[:99]


def type_of(span: Span, attributes: dict[str, Any]) -> str:
    operation = str(attributes.get("gen_ai.operation.name") or "")
    known = OPERATION_TYPES.get(operation)
    if span.status.code == Status.STATUS_CODE_ERROR:
        noun = known.split(".")[0] if known is not None else "span"
        return f"{noun}.error"
    if known is not None:
        return known
    verb = _TYPE_PART.sub("_", operation.lower()).strip("_")[:40]
    return f"span.{verb}" if verb and verb[0].isalpha() else "span.ended"


def _instant(nanos: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _kept(attributes: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The GenAI attributes and `error.type`, each string cut to MAX_VALUE_CHARS (contents
    aside); how many others were dropped."""
    kept: dict[str, Any] = {}
    for name, value in attributes.items():
        if not (name.startswith("gen_ai.") or name == "error.type"):
            continue
        cut = isinstance(value, str) and name not in CONTENT_ATTRIBUTES
        kept[name] = value[:MAX_VALUE_CHARS] if cut else value
    return kept, len(attributes) - len(kept)


def _fitted(data: dict[str, Any]) -> dict[str, Any]:
    """`data` within MAX_DATA_BYTES: message contents cut, largest first, then dropped;
    then other attributes dropped, largest first. Each cut is marked."""
    attributes: dict[str, Any] = data["attributes"]
    contents = sorted(
        (name for name in CONTENT_ATTRIBUTES if name in attributes),
        key=lambda name: -len(json.dumps(attributes[name])),
    )
    for name in contents:
        over = _size(data) - MAX_DATA_BYTES
        if over <= 0:
            return data
        value = attributes[name]
        text = value if isinstance(value, str) else json.dumps(value)
        data["contentCut"] = True
        attributes[name] = text[: max(0, len(text) - over - len('"contentCut": true, '))]
        if _size(data) > MAX_DATA_BYTES:
            del attributes[name]
    while _size(data) > MAX_DATA_BYTES and attributes:
        del attributes[max(attributes, key=lambda name: len(json.dumps(attributes[name])))]
        data["attributesCut"] = True
    return data


def _size(data: dict[str, Any]) -> int:
    return len(json.dumps(data))


def _data(span: Span, attributes: dict[str, Any], started: datetime, ended: datetime) -> Any:
    kept, dropped = _kept(attributes)
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
    data: dict[str, Any] = {"span": described, "attributes": kept}
    if dropped:
        data["droppedAttributes"] = dropped
    tool = attributes.get("gen_ai.tool.name")
    if tool:
        data["tool"] = str(tool)[:200]
    if span.status.code == Status.STATUS_CODE_ERROR:
        data["error"] = (span.status.message or str(attributes.get("error.type") or "error"))[:500]
    return _fitted(data)


def _ending(span: Span, attributes: dict[str, Any]) -> str | None:
    """An agent's root span (no parent, `invoke_agent`) ends its session: in error,
    abnormally; otherwise (OK or unset) normally."""
    if span.parent_span_id or attributes.get("gen_ai.operation.name") != "invoke_agent":
        return None
    if span.status.code == Status.STATUS_CODE_ERROR:
        return SessionState.CLOSED_ABNORMALLY
    return SessionState.CLOSED


def _conversations(request: ExportTraceServiceRequest) -> dict[bytes, str]:
    """Trace id → the conversation id any span of that trace in the export carries, so
    the spans of one trace that do not carry it land in the same session."""
    found: dict[bytes, str] = {}
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                for pair in span.attributes:
                    if pair.key == "gen_ai.conversation.id" and pair.value.string_value:
                        found.setdefault(span.trace_id, pair.value.string_value)
    return found


def _span_event(
    span: Span, resource: dict[str, Any], conversations: dict[bytes, str]
) -> SpanEvent | str:
    """The span's event, or why it cannot be one."""
    if len(span.trace_id) != TRACE_ID_BYTES or not any(span.trace_id):
        return "no valid trace id"
    if len(span.span_id) != SPAN_ID_BYTES or not any(span.span_id):
        return "no valid span id"
    if span.end_time_unix_nano == 0 or span.end_time_unix_nano < span.start_time_unix_nano:
        return "no end time, or an end before the start"
    ended = _instant(span.end_time_unix_nano)
    if ended > _LATEST:
        return "an end time after 2999"
    attributes = attributes_of(span.attributes)
    if "gen_ai.conversation.id" not in attributes and span.trace_id in conversations:
        attributes["gen_ai.conversation.id"] = conversations[span.trace_id]
    agent = agent_of(attributes, resource)
    if agent is None:
        return "no gen_ai.agent.name and no service.name"
    started = _instant(span.start_time_unix_nano)
    event: Event = {
        "id": event_id(span.trace_id, span.span_id, ended),
        "agent": agent,
        "type": type_of(span, attributes),
        "at": _rfc3339(ended),
        "taskId": span.trace_id.hex(),
        "data": _data(span, attributes, started, ended),
    }
    return SpanEvent(session_of(attributes, span.trace_id), event, _ending(span, attributes))


def map_export(request: ExportTraceServiceRequest) -> Mapped:
    """Every span of the export as an event of its session, each session's in time order."""
    mapped = Mapped()
    conversations = _conversations(request)
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found = _span_event(span, resource, conversations)
                if isinstance(found, str):
                    mapped.reject(found)
                else:
                    mapped.add(found)
    for events in mapped.events.values():
        events.sort(key=lambda event: (event["at"], event["id"]))
    return mapped
