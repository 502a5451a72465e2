"""The table of telemetry sources: for each agent or convention that sends OpenTelemetry,
how its records are recognised, which attribute names the session and the agent, which
spans and log events become which kind of event, and where it says that a tool failed or
what a request cost. One row per source; an unknown source is read by the generic row
(the GenAI semantic conventions). `docs/otlp.md` shows the same table."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """What a record reports."""

    TOOL = "tool"
    """A tool call: merged with every other report of the same call id."""
    MODEL = "model"
    """A model request: merged by its request id; carries tokens and cost."""
    TURN = "turn"
    """A turn's root span (one prompt's run): it closes the turn, never the session."""
    PROMPT = "prompt"
    OTHER = "other"


@dataclass(frozen=True)
class Source:
    name: str
    service_names: tuple[str, ...] = ()
    """`service.name` values that name this source."""
    scope_prefixes: tuple[str, ...] = ()
    """Instrumentation scope names that name it."""
    span_marker: str | None = None
    """A span attribute whose presence names it (OpenInference's span kind)."""
    session_attributes: tuple[str, ...] = ("gen_ai.conversation.id", "session.id")
    event_prefix: str = ""
    """Stripped from log event names (`claude_code.tool_result` → `tool_result`)."""
    spans: dict[str, Kind] = field(default_factory=dict)
    """Span name → kind, before `gen_ai.operation.name` is read."""
    logs: dict[str, Kind] = field(default_factory=dict)
    """Log event name (prefix stripped) → kind; another event is OTHER."""
    failure: str = ""
    """Where this source says a tool failed, in words (for the docs)."""


OPERATION_KINDS = {
    "execute_tool": Kind.TOOL,
    "chat": Kind.MODEL,
    "text_completion": Kind.MODEL,
    "generate_content": Kind.MODEL,
    "embeddings": Kind.MODEL,
    "invoke_workflow": Kind.TURN,
    "invoke_agent": Kind.TURN,
}
"""`gen_ai.operation.name` → kind, for every source. `invoke_agent` is a turn only when it
is a root span; below a workflow it is an agent step."""

OPENINFERENCE_KINDS = {
    "TOOL": Kind.TOOL,
    "LLM": Kind.MODEL,
    "AGENT": Kind.TURN,
    "CHAIN": Kind.TURN,
}
"""`openinference.span.kind` → kind (AGENT and CHAIN are turns only as root spans)."""

CLAUDE_CODE = Source(
    name="claude-code",
    service_names=("claude-code",),
    scope_prefixes=("com.anthropic.claude_code",),
    session_attributes=("session.id", "gen_ai.conversation.id"),
    event_prefix="claude_code.",
    spans={
        "claude_code.interaction": Kind.TURN,
        "claude_code.llm_request": Kind.MODEL,
        "claude_code.tool": Kind.TOOL,
        "claude_code.tool.execution": Kind.TOOL,
    },
    logs={
        "tool_result": Kind.TOOL,
        "tool_decision": Kind.TOOL,
        "api_request": Kind.MODEL,
        "api_error": Kind.MODEL,
        "user_prompt": Kind.PROMPT,
    },
    failure="`tool_result` with `success` false and `error_type`; the "
    "`claude_code.tool.execution` span (child of `claude_code.tool`) in error",
)
GEMINI_CLI = Source(
    name="gemini-cli",
    service_names=("gemini-cli",),
    scope_prefixes=("gemini-cli",),
    session_attributes=("session.id", "gen_ai.conversation.id"),
    event_prefix="gemini_cli.",
    logs={
        "tool_call": Kind.TOOL,
        "api_response": Kind.MODEL,
        "api_error": Kind.MODEL,
        "user_prompt": Kind.PROMPT,
    },
    failure="`gemini_cli.tool_call` with `success` false, or `metadata` holding a non-zero "
    "`exitCode` or `isError` true (its spans end OK, and name neither a call nor a request: "
    "they are kept as `span.*` events, and only the logs count calls and tokens)",
)
GOOGLE_ADK = Source(
    name="google-adk",
    scope_prefixes=("gcp.vertex.agent", "google.adk"),
    failure="the `execute_tool` span in error, with `error.type`",
)
OPENINFERENCE = Source(
    name="openinference",
    scope_prefixes=("openinference.",),
    span_marker="openinference.span.kind",
    session_attributes=("session.id", "gen_ai.conversation.id"),
    failure="the TOOL span in error, with an `exception` event",
)
GENAI = Source(
    name="genai",
    failure="the `execute_tool` span in error (`error.type`), or a child span of it in error",
)
"""The generic row: the GenAI semantic conventions (v1.36 and later)."""

SOURCES = (CLAUDE_CODE, GEMINI_CLI, GOOGLE_ADK, OPENINFERENCE)


def source_of(resource: dict[str, Any], scope: str, span_attributes: dict[str, Any]) -> Source:
    """The row whose service name, scope or span marker the record carries, else GENAI."""
    service = str(resource.get("service.name") or "")
    for source in SOURCES:
        if service in source.service_names or any(
            scope.startswith(prefix) for prefix in source.scope_prefixes
        ):
            return source
        if source.span_marker is not None and source.span_marker in span_attributes:
            return source
    return GENAI


CALL_ID_ATTRIBUTES = (
    "gen_ai.tool.call.id",
    "tool_use_id",
    "function_call_id",
    "call_id",
    "tool_call_id",
)
REQUEST_ID_ATTRIBUTES = ("request_id", "gen_ai.response.id", "response_id")
TOOL_NAME_ATTRIBUTES = ("gen_ai.tool.name", "tool_name", "function_name", "tool.name")
_FALSE = (False, "false", "False", 0)
_SESSION_ID = re.compile(r"^(?!__.*__$)[A-Za-z0-9_-]{1,128}$")


PLACEHOLDERS = ("", "<not specified>")
"""Values that say nothing: ADK writes `<not specified>` for a tool call id it lost."""


def first_of(attributes: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = attributes.get(name)
        if value is not None and value not in PLACEHOLDERS:
            return str(value)[:200]
    return None


def session_id_of(source: Source, attributes: dict[str, Any]) -> str | None:
    """The session the record names, as a valid session id: hashed when it is not one."""
    named = first_of(attributes, source.session_attributes)
    if named is None:
        return None
    if _SESSION_ID.match(named):
        return named
    return "c-" + hashlib.sha256(named.encode()).hexdigest()[:40]


def _metadata(attributes: dict[str, Any]) -> dict[str, Any]:
    """A tool's `metadata`, which some sources send as a JSON string."""
    metadata = attributes.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return {}
    return metadata if isinstance(metadata, dict) else {}


def tool_failure(attributes: dict[str, Any], status_error: str | None) -> str | None:
    """Why a tool call failed, whichever way the record says it, else None: an error
    status; `success` false or an `error_type`; a non-zero exit code or `isError` in the
    tool's metadata."""
    if status_error is not None:
        return status_error
    metadata = _metadata(attributes)
    exit_code = metadata.get("exitCode", attributes.get("exit_code"))
    said = (
        attributes.get("success") in _FALSE
        or attributes.get("error_type")
        or metadata.get("isError") is True
        or (isinstance(exit_code, int | float) and exit_code != 0)
    )
    if not said:
        return None
    reason = first_of(attributes, ("error", "error_type", "error.type", "error.message"))
    if reason is None and exit_code not in (None, 0):
        reason = f"exit code {exit_code}"
    return reason or "the tool reported a failure"


def _number(attributes: dict[str, Any], *names: str) -> float | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"\d{1,15}(\.\d{1,12})?", value):
            return float(value)
    return None


def usage_from(attributes: dict[str, Any]) -> dict[str, float]:
    """A model request's tokens and cost, from whichever names its source uses: input
    counts every input token (cached and cache writes included), cached the cache reads."""
    usage: dict[str, float] = {}
    total_input = _number(
        attributes, "gen_ai.usage.input_tokens", "input_token_count", "llm.token_count.prompt"
    )
    if total_input is None:
        parts = [
            _number(attributes, name)
            for name in ("input_tokens", "cache_read_tokens", "cache_creation_tokens")
        ]
        if parts[0] is not None:
            total_input = sum(part or 0 for part in parts)
    figures = {
        "input_tokens": total_input,
        "output_tokens": _number(
            attributes,
            "gen_ai.usage.output_tokens",
            "output_token_count",
            "output_tokens",
            "llm.token_count.completion",
        ),
        "cached_tokens": _number(
            attributes,
            "gen_ai.usage.cache_read.input_tokens",
            "cached_content_token_count",
            "cache_read_tokens",
            "llm.token_count.prompt_details.cache_read",
        ),
        "cost_usd": _number(attributes, "cost_usd", "llm.cost.total"),
    }
    for name, value in figures.items():
        if value is not None:
            usage[name] = round(value, 6) if name == "cost_usd" else int(value)
    return usage
