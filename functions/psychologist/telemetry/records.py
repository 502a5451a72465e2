"""What every OTLP record shares, spans, log records and metric points alike: attribute
values as JSON, times, the agent a record names, and what of its attributes an event
keeps, cut to fit the 8 KiB an event may carry."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from functions.psychologist.telemetry.reports import MAX_DATA_BYTES
from functions.psychologist.telemetry.sources import (
    CALL_ID_ATTRIBUTES,
    REQUEST_ID_ATTRIBUTES,
    TOOL_NAME_ATTRIBUTES,
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

KEPT_ATTRIBUTES = frozenset(
    {
        *CALL_ID_ATTRIBUTES,
        *REQUEST_ID_ATTRIBUTES,
        *TOOL_NAME_ATTRIBUTES,
        "error.type",
        "error",
        "error_type",
        "error.message",
        "success",
        "exit_code",
        "metadata",
        "decision",
        "permission_mode",
        "effort",
        "model",
        "prompt.id",
        "prompt_id",
        "duration_ms",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_creation_tokens",
        "cost_usd",
        "input_token_count",
        "output_token_count",
        "cached_content_token_count",
        "status_code",
        "openinference.span.kind",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "exception.type",
        "exception.message",
    }
)
"""Beyond every `gen_ai.*` attribute: what the sources say of a call, its failure and its
cost, under their own names."""


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


def instant(nanos: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)


def rfc3339(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def agent_of(attributes: dict[str, Any], resource: dict[str, Any]) -> str | None:
    """`gen_ai.agent.name` of the resource (what `evidencia launch` sets, and what a user
    names the agent by), else of the record, else the resource's `service.name`, with
    every character an agent name may not hold made `_` (at most 100)."""
    name = (
        resource.get("gen_ai.agent.name")
        or attributes.get("gen_ai.agent.name")
        or resource.get("service.name")
    )
    if not name:
        return None
    cleaned = _AGENT_CHAR.sub("_", str(name))[:100]
    return cleaned if cleaned[0].isalnum() else "a" + cleaned[:99]


def kept(attributes: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The GenAI attributes and what the sources say of a call under their own names,
    each string cut to MAX_VALUE_CHARS (contents aside); how many others were dropped."""
    found: dict[str, Any] = {}
    for name, value in attributes.items():
        if not (name.startswith("gen_ai.") or name in KEPT_ATTRIBUTES):
            continue
        cut = isinstance(value, str) and name not in CONTENT_ATTRIBUTES
        found[name] = value[:MAX_VALUE_CHARS] if cut else value
    return found, len(attributes) - len(found)


def fitted(data: dict[str, Any]) -> dict[str, Any]:
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
