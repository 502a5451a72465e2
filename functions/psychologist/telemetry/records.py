"""What every OTLP record shares, spans, log records and metric points alike: the walk
over an export's resources, scopes and records; attribute values as JSON; times; the
agent a record names; and the event a record becomes once its source's row has read it,
assembled here once for spans and log records, with what of its attributes it keeps cut
to fit the 8 KiB an event may carry."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from functions.psychologist.documents import Event
from functions.psychologist.telemetry.reports import MAX_DATA_BYTES, Report, Turn, call_event_id
from functions.psychologist.telemetry.sources import (
    Attributes,
    Kind,
    Signal,
    Source,
    Value,
    first_of,
    usage_from,
)

MAX_VALUE_CHARS = 1_000
"""A kept attribute's string value is cut to this many characters (message contents aside)."""
LATEST = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)
_AGENT_CHAR = re.compile(r"[^A-Za-z0-9_.:-]")

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

_FIELDS = {
    Signal.TRACES: ("resource_spans", "scope_spans", "spans"),
    Signal.LOGS: ("resource_logs", "scope_logs", "log_records"),
    Signal.METRICS: ("resource_metrics", "scope_metrics", "metrics"),
}
"""Each signal's export: its resources, their scopes, their records."""


@dataclass(frozen=True)
class Placed:
    """A record with the resource and the instrumentation scope it was sent under."""

    resource: Attributes
    scope: str
    record: Any
    """A `Span`, `LogRecord` or `Metric`, as the signal says."""


def walk(request: Message, signal: Signal) -> Iterator[Placed]:
    """Every record of an export, in order, with its resource's attributes and its scope."""
    resources, scopes, records = _FIELDS[signal]
    for group in getattr(request, resources):
        resource = attributes_of(group.resource.attributes)
        for scoped in getattr(group, scopes):
            for record in getattr(scoped, records):
                yield Placed(resource, scoped.scope.name, record)


def value_of(value: AnyValue) -> Value:
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
    found: Value = getattr(value, kind)
    return found


def attributes_of(attributes: Any) -> Attributes:
    pairs: list[KeyValue] = list(attributes)
    return {pair.key: value_of(pair.value) for pair in pairs}


def instant(nanos: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)


def rfc3339(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def agent_of(source: Source, attributes: Attributes, resource: Attributes) -> str | None:
    """The record's agent name where its row says it is (`AgentName`), with every
    character an agent name may not hold made `_` (at most 100)."""
    names = source.agent_name
    places = ((resource, names.resource), (attributes, names.record), (resource, names.fallback))
    name = next(
        (found for where, keys in places for key in keys if (found := where.get(key))), None
    )
    if not name:
        return None
    cleaned = _AGENT_CHAR.sub("_", str(name))[:100]
    return cleaned if cleaned[0].isalnum() else "a" + cleaned[:99]


def kept(source: Source, attributes: Attributes) -> tuple[Attributes, int]:
    """The attributes the row keeps, each string cut to MAX_VALUE_CHARS (contents aside);
    how many others were dropped."""
    found: Attributes = {}
    for name, value in attributes.items():
        if not source.keeps(name):
            continue
        cut = isinstance(value, str) and name not in CONTENT_ATTRIBUTES
        found[name] = value[:MAX_VALUE_CHARS] if isinstance(value, str) and cut else value
    return found, len(attributes) - len(found)


@dataclass(frozen=True)
class Read:
    """A span or log record as its source's row reads it: what the event is made of."""

    source: Source
    session: str
    agent: str
    kind: Kind
    type: str
    at: datetime
    attributes: Attributes
    described: tuple[str, Attributes]
    """(`span` or `log`, what the record is): kept under that key of the event's data."""
    own_id: str
    """The event id of a record that reports no call: the same whenever it is sent."""
    report: tuple[str, Attributes]
    """(key, what it said): the record's entry under `data.reports` when it reports a call."""
    call_id: str | None = None
    error: str | None = None
    task: str | None = None
    turn: Turn | None = None


def report_of(read: Read) -> Report:
    """The event the record becomes, and the session and turn it belongs to."""
    found, dropped = kept(read.source, read.attributes)
    data: dict[str, Any] = {read.described[0]: read.described[1], "attributes": found}
    if dropped:
        data["droppedAttributes"] = dropped
    tool = first_of(read.attributes, read.source.tool_names)
    if tool and read.kind == Kind.TOOL:
        data["tool"] = tool
    if read.error is not None:
        data["error"] = read.error[:500]
    usage = usage_from(read.source, read.attributes) if read.kind == Kind.MODEL else {}
    if usage:
        data["usage"] = usage
    if read.call_id is not None:
        data["callId"] = read.call_id
        data["reports"] = {read.report[0]: read.report[1]}
    kind_key = "tool" if read.kind == Kind.TOOL else "request"
    event: Event = {
        "id": read.own_id if read.call_id is None else call_event_id(kind_key, read.call_id),
        "agent": read.agent,
        "type": read.type,
        "at": rfc3339(read.at),
        "data": fitted(data),
    }
    if read.task:
        event["taskId"] = read.task[:128]
    return Report(read.session, event, mergeable=read.call_id is not None, turn=read.turn)


def fitted(data: dict[str, Any]) -> dict[str, Any]:
    """`data` within MAX_DATA_BYTES: message contents cut, largest first, then dropped;
    then other attributes dropped, largest first. Each cut is marked."""
    attributes: Attributes = data["attributes"]
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
