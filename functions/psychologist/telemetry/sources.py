"""The table of telemetry sources: one row per agent or convention that sends
OpenTelemetry, holding everything that source does as data. A row says how its records
are recognised, which signals it sends, which attribute names its session, which spans and
log events are tool calls, model requests, prompts or turns (a name plus a condition on
attributes, as the OpenTelemetry Collector's transform statements carry a `where`), how it
says a tool failed, where its tokens and cost are, which metrics it meters, and which of
its attributes an event keeps. An unknown source is read by the generic row (the GenAI
semantic conventions). `docs/otlp.md` shows the table, rendered from these rows.

Adding a source is adding a row here (and its test): nothing in `spans.py`,
`log_records.py`, `metric_points.py` or `records.py` names a source."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

Value: TypeAlias = "str | int | float | bool | list[Value] | dict[str, Value] | None"
"""An attribute value as JSON."""
Attributes: TypeAlias = "dict[str, Value]"


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
    """Kept as a `span.*` or `log.*` event."""
    DROPPED = "dropped"
    """Says nothing the Psychologist uses: counted as rejected in `partial_success`."""


class Signal(StrEnum):
    TRACES = "traces"
    LOGS = "logs"
    METRICS = "metrics"


@dataclass(frozen=True)
class Match:
    """A record of this name (any name when empty) whose attributes hold every `where`
    pair is a record of this kind."""

    name: str
    kind: Kind
    where: tuple[tuple[str, str], ...] = ()
    present: tuple[str, ...] = ()
    """Attributes the record must carry."""

    def matches(self, name: str, attributes: Attributes) -> bool:
        return (
            (not self.name or name == self.name)
            and all(str(attributes.get(key)) == value for key, value in self.where)
            and all(key in attributes for key in self.present)
        )


@dataclass(frozen=True)
class Failure:
    """How a source says that a tool call failed."""

    status: bool = True
    """A span's error status says it."""
    flags: tuple[str, ...] = ("success",)
    """An attribute holding false says it; empty where the source's `success` cannot be
    trusted."""
    errors: tuple[str, ...] = ("error_type",)
    """An attribute that is present says it."""
    exit_codes: tuple[str, ...] = ("exit_code",)
    """A non-zero number here says it."""
    metadata: bool = False
    """The tool's `metadata` (a JSON string or a map) says it: `exitCode`, `isError`."""
    output: tuple[str, str] | None = None
    """(attribute, pattern): a non-zero exit code the pattern's group finds in that text."""
    reasons: tuple[str, ...] = ("error", "error_type", "error.type", "error.message")
    """Where the failure's reason is said."""
    words: str = ""
    """The same, in words, for the docs."""


@dataclass(frozen=True)
class ModelFailure:
    """How a source says that a model request failed: a log event whose name ends so, or
    a record carrying one of `present`."""

    suffix: str = "error"
    present: tuple[str, ...] = ("error.message",)
    reasons: tuple[str, ...] = ("error", "error.message", "status_code")
    """Where the failure's reason is said; else the event's name."""

    def of(self, name: str, attributes: Attributes) -> str | None:
        """Why the log event's request failed, or None when it did not."""
        if not (name.endswith(self.suffix) or any(key in attributes for key in self.present)):
            return None
        return first_of(attributes, self.reasons) or name


@dataclass(frozen=True)
class AgentName:
    """Where a record's agent name is, first found first: `gen_ai.agent.name` of the
    resource (what `evidencia launch` sets, and what a user names the agent by), else of
    the record, else the resource's `service.name`."""

    resource: tuple[str, ...] = ("gen_ai.agent.name",)
    record: tuple[str, ...] = ("gen_ai.agent.name",)
    fallback: tuple[str, ...] = ("service.name",)


@dataclass(frozen=True)
class Usage:
    """Where a model request's tokens and cost are, by the source's own names (the first
    present wins). Input counts every input token, cached and cache writes included."""

    input: tuple[str, ...] = ("gen_ai.usage.input_tokens",)
    input_parts: tuple[str, ...] = ()
    """Summed into input when no `input` name is present (a source that counts cache reads
    and writes apart from the input)."""
    output: tuple[str, ...] = ("gen_ai.usage.output_tokens",)
    cached: tuple[str, ...] = ("gen_ai.usage.cache_read.input_tokens",)
    cost: tuple[str, ...] = ()

    def names(self) -> frozenset[str]:
        return frozenset((*self.input, *self.input_parts, *self.output, *self.cached, *self.cost))


@dataclass(frozen=True)
class Figure:
    """A metric point of this metric, whose `type` (or `gen_ai.token.type`) is this,
    adds its value to these usage figures."""

    metric: str
    type: str
    figures: tuple[str, ...]


@dataclass(frozen=True)
class Turns:
    """How a source's turns open and close: a trace is a turn, opened by its first span
    (or, with `logs_open`, a log record of a prompt, tool call or model request that names
    the trace) and closed by its
    root span, or by a span named in `closers` where the root ends before the turn does.
    None on a row: the source sends no turns, and its session's end by silence reads none."""

    closers: tuple[str, ...] = ()
    logs_open: bool = False
    words: str = ""

    def closes(self, name: str, root: bool) -> bool:
        return name in self.closers if self.closers else root


@dataclass(frozen=True)
class Docs:
    """What the docs' table says of a row beyond what its data renders."""

    label: str
    session: str = ""
    notes: str = ""


GENAI_SPANS = (
    Match("", Kind.TOOL, (("gen_ai.operation.name", "execute_tool"),)),
    Match("", Kind.MODEL, (("gen_ai.operation.name", "chat"),)),
    Match("", Kind.MODEL, (("gen_ai.operation.name", "text_completion"),)),
    Match("", Kind.MODEL, (("gen_ai.operation.name", "generate_content"),)),
    Match("", Kind.MODEL, (("gen_ai.operation.name", "embeddings"),)),
    Match("", Kind.TURN, (("gen_ai.operation.name", "invoke_workflow"),)),
    Match("", Kind.TURN, (("gen_ai.operation.name", "invoke_agent"),)),
)
"""`gen_ai.operation.name`, read by every row after its own span names. `invoke_agent` is a
turn only when it is a root span; below a workflow it is an agent step."""
CALL_IDS = ("gen_ai.tool.call.id",)
REQUEST_IDS = ("gen_ai.response.id",)
TOOL_NAMES = ("gen_ai.tool.name",)
KEPT = frozenset(
    {
        "error.type",
        "error",
        "error_type",
        "error.message",
        "exception.type",
        "exception.message",
        "success",
        "exit_code",
        "status_code",
        "model",
        "duration_ms",
        "prompt.id",
        "prompt_id",
    }
)
"""Kept by every row, beyond every `gen_ai.*` attribute and the row's own names."""


@dataclass(frozen=True)
class Source:
    name: str
    docs: Docs
    signals: frozenset[Signal] = frozenset(Signal)
    service_names: tuple[str, ...] = ()
    """`service.name` values that name this source."""
    scope_prefixes: tuple[str, ...] = ()
    """Instrumentation scope names that name it."""
    span_marker: str | None = None
    """A span attribute whose presence names it (OpenInference's span kind)."""
    session_attributes: tuple[str, ...] = ("gen_ai.conversation.id", "session.id")
    event_prefix: str = ""
    """Stripped from log event names (`claude_code.tool_result` → `tool_result`)."""
    log_names: tuple[str, ...] = ("event_name", "event.name", "body")
    """Where a log record's event name is, first found first: the record's `event_name`,
    an attribute, or a string body."""
    spans: tuple[Match, ...] = ()
    """Read first to last, then `GENAI_SPANS`; a span none matches is OTHER, or DROPPED
    when `other_spans` is false."""
    other_spans: bool = True
    logs: tuple[Match, ...] = ()
    """Read first to last (names with the prefix stripped); else OTHER."""
    turns: Turns | None = field(default_factory=Turns)
    call_ids: tuple[str, ...] = CALL_IDS
    request_ids: tuple[str, ...] = REQUEST_IDS
    tool_names: tuple[str, ...] = TOOL_NAMES
    failure: Failure = field(default_factory=Failure)
    model_failure: ModelFailure = field(default_factory=ModelFailure)
    agent_name: AgentName = field(default_factory=AgentName)
    task_attributes: tuple[str, ...] = ("prompt.id", "prompt_id")
    """A log record's task: the prompt it belongs to (else its trace)."""
    sequence: str = "event.sequence"
    """The attribute that tells apart records sent at the same instant: part of a log
    record's id."""
    usage: Usage = field(default_factory=Usage)
    metrics: tuple[Figure, ...] = ()
    kept: frozenset[str] = frozenset()
    """Attributes kept beyond `KEPT`, every `gen_ai.*`, the row's ids, names and usage."""

    def keeps(self, name: str) -> bool:
        return (
            name.startswith("gen_ai.")
            or name in KEPT
            or name in self.kept
            or name in self.call_ids
            or name in self.request_ids
            or name in self.tool_names
            or name in self.usage.names()
        )


CLAUDE_CODE = Source(
    name="claude-code",
    docs=Docs("Claude Code 2.1", session="the `--session-id`"),
    service_names=("claude-code",),
    scope_prefixes=("com.anthropic.claude_code",),
    session_attributes=("session.id", "gen_ai.conversation.id"),
    event_prefix="claude_code.",
    spans=(
        Match("claude_code.interaction", Kind.TURN),
        Match("claude_code.llm_request", Kind.MODEL),
        Match("claude_code.tool", Kind.TOOL),
        Match("claude_code.tool.execution", Kind.TOOL),
    ),
    logs=(
        Match("tool_result", Kind.TOOL),
        Match("tool_decision", Kind.TOOL),
        Match("api_request", Kind.MODEL),
        Match("api_error", Kind.MODEL),
        Match("user_prompt", Kind.PROMPT),
    ),
    turns=Turns(words="`claude_code.interaction`, one root span per prompt"),
    call_ids=("tool_use_id", *CALL_IDS),
    request_ids=("request_id", *REQUEST_IDS),
    tool_names=("tool_name", *TOOL_NAMES),
    failure=Failure(
        words="`tool_result` with `success` false and `error_type`; the "
        "`claude_code.tool.execution` span (child of `claude_code.tool`) in error"
    ),
    usage=Usage(
        input=(),
        input_parts=("input_tokens", "cache_read_tokens", "cache_creation_tokens"),
        output=("output_tokens",),
        cached=("cache_read_tokens",),
        cost=("cost_usd",),
    ),
    metrics=(
        Figure("claude_code.token.usage", "input", ("input_tokens",)),
        Figure("claude_code.token.usage", "output", ("output_tokens",)),
        Figure("claude_code.token.usage", "cacheRead", ("input_tokens", "cached_tokens")),
        Figure("claude_code.token.usage", "cacheCreation", ("input_tokens",)),
        Figure("claude_code.cost.usage", "", ("cost_usd",)),
    ),
    kept=frozenset({"decision", "permission_mode", "effort"}),
)
GEMINI_CLI = Source(
    name="gemini-cli",
    docs=Docs(
        "Gemini CLI 0.61",
        session="the `--session-id`",
        notes="its spans name neither a call nor a request: they are kept as `span.*` "
        "events, and only its logs count calls and tokens",
    ),
    service_names=("gemini-cli",),
    scope_prefixes=("gemini-cli",),
    session_attributes=("session.id", "gen_ai.conversation.id"),
    event_prefix="gemini_cli.",
    logs=(
        Match("tool_call", Kind.TOOL),
        Match("api_response", Kind.MODEL),
        Match("api_error", Kind.MODEL),
        Match("user_prompt", Kind.PROMPT),
    ),
    turns=Turns(words="each span is a root of its own (`llm_call`, `schedule_tool_calls`)"),
    call_ids=("function_call_id", "call_id", "tool_call_id", *CALL_IDS),
    request_ids=("response_id", *REQUEST_IDS),
    tool_names=("function_name", *TOOL_NAMES),
    failure=Failure(
        metadata=True,
        words="`gemini_cli.tool_call` with `success` false, or `metadata` holding a non-zero "
        "`exitCode` or `isError` true (its spans end OK)",
    ),
    usage=Usage(
        input=("input_token_count",),
        output=("output_token_count",),
        cached=("cached_content_token_count",),
    ),
    metrics=(
        Figure("gemini_cli.token.usage", "input", ("input_tokens",)),
        Figure("gemini_cli.token.usage", "output", ("output_tokens",)),
        Figure("gemini_cli.token.usage", "cache", ("cached_tokens",)),
    ),
    kept=frozenset({"metadata", "input_token_count", "output_token_count"}),
)
CODEX = Source(
    name="codex",
    docs=Docs(
        "Codex CLI 0.171",
        session="Codex names its own; `evidencia launch` relays its records with the "
        "launched session's `session.id`",
        notes="spans other than a turn's `run_turn` and its `exec_command` runs (about 780 "
        "a turn) are rejected, and so are its metric points, which name no session",
    ),
    service_names=("codex_exec", "codex_cli_rs"),
    scope_prefixes=("codex",),
    session_attributes=("session.id", "conversation.id"),
    event_prefix="codex.",
    log_names=("event.name",),
    spans=(Match("run_turn", Kind.TURN), Match("exec_command", Kind.TOOL)),
    other_spans=False,
    logs=(
        Match("tool_result", Kind.TOOL),
        Match("tool_decision", Kind.TOOL),
        Match(
            "sse_event",
            Kind.MODEL,
            (("event.kind", "response.completed"),),
            present=("input_token_count",),
        ),
        Match("sse_event", Kind.DROPPED),
        Match("user_prompt", Kind.PROMPT),
    ),
    turns=Turns(
        closers=("run_turn",),
        logs_open=True,
        words="a trace per turn (its root `turn/start` ends within milliseconds): opened by "
        "its first record, logs included, closed by `run_turn`",
    ),
    call_ids=("call_id", *CALL_IDS),
    tool_names=("tool_name", *TOOL_NAMES),
    failure=Failure(
        flags=(),
        output=("output", r"Process exited with code (-?\d+)"),
        words="`codex.tool_result` whose `output` says `Process exited with code N`, N not 0 "
        "(its `success` says true for a failed command, and its spans end UNSET)",
    ),
    usage=Usage(
        input=("input_token_count",),
        output=("output_token_count",),
        cached=("cached_token_count",),
    ),
    kept=frozenset(
        {"event.kind", "reasoning_token_count", "arguments", "output", "decision", "turn.id"}
    ),
)
GOOGLE_ADK = Source(
    name="google-adk",
    docs=Docs("Google ADK 2.x", session="taken from the trace's other spans where a span has none"),
    signals=frozenset({Signal.TRACES}),
    scope_prefixes=("gcp.vertex.agent", "google.adk"),
    turns=Turns(words="`invoke_workflow`, one root span per turn"),
    failure=Failure(words="the `execute_tool` span in error, with `error.type`"),
)
OPENINFERENCE = Source(
    name="openinference",
    docs=Docs("OpenInference (LangChain, LlamaIndex, OpenAI Agents SDK, CrewAI, pydantic-ai)"),
    signals=frozenset({Signal.TRACES}),
    scope_prefixes=("openinference.",),
    span_marker="openinference.span.kind",
    session_attributes=("session.id", "gen_ai.conversation.id"),
    spans=(
        Match("", Kind.TOOL, (("openinference.span.kind", "TOOL"),)),
        Match("", Kind.MODEL, (("openinference.span.kind", "LLM"),)),
        Match("", Kind.TURN, (("openinference.span.kind", "AGENT"),)),
        Match("", Kind.TURN, (("openinference.span.kind", "CHAIN"),)),
    ),
    turns=Turns(words="the root `AGENT` or `CHAIN` span"),
    failure=Failure(words="the TOOL span in error, with an `exception` event"),
    usage=Usage(
        input=("llm.token_count.prompt",),
        output=("llm.token_count.completion",),
        cached=("llm.token_count.prompt_details.cache_read",),
        cost=("llm.cost.total",),
    ),
    kept=frozenset({"openinference.span.kind"}),
)
GENAI = Source(
    name="genai",
    docs=Docs("GenAI semantic conventions (v1.36 and later)", session="else the trace id"),
    turns=Turns(words="the root span (`invoke_workflow`, `invoke_agent`)"),
    failure=Failure(
        words="the `execute_tool` span in error (`error.type`), or a child span of it in error"
    ),
    metrics=(
        Figure("gen_ai.client.token.usage", "input", ("input_tokens",)),
        Figure("gen_ai.client.token.usage", "output", ("output_tokens",)),
    ),
)
"""The generic row: the GenAI semantic conventions (v1.36 and later)."""

SOURCES = (CLAUDE_CODE, GEMINI_CLI, CODEX, GOOGLE_ADK, OPENINFERENCE)
ROWS = (*SOURCES, GENAI)


def source_of(resource: Attributes, scope: str, attributes: Attributes) -> Source:
    """The row whose service name, scope or span marker the record carries, else GENAI."""
    service = str(resource.get("service.name") or "")
    for source in SOURCES:
        if service in source.service_names or any(
            scope.startswith(prefix) for prefix in source.scope_prefixes
        ):
            return source
        if source.span_marker is not None and source.span_marker in attributes:
            return source
    return GENAI


def span_kind(source: Source, name: str, attributes: Attributes, root: bool) -> Kind:
    """What a span reports: the first of the row's matches, then the GenAI operation. A
    turn only as a root span, or as a span the row names as a turn's closer."""
    found = next(
        (match.kind for match in (*source.spans, *GENAI_SPANS) if match.matches(name, attributes)),
        Kind.OTHER if source.other_spans else Kind.DROPPED,
    )
    closer = source.turns is not None and name in source.turns.closers
    if found == Kind.TURN and not (root or closer):
        return Kind.OTHER if source.other_spans else Kind.DROPPED
    return found


def log_kind(source: Source, name: str, attributes: Attributes) -> Kind:
    return next(
        (match.kind for match in source.logs if match.matches(name, attributes)), Kind.OTHER
    )


_FALSE = (False, "false", "False", 0)
_SESSION_ID = re.compile(r"^(?!__.*__$)[A-Za-z0-9_-]{1,128}$")
PLACEHOLDERS = ("", "<not specified>")
"""Values that say nothing: ADK writes `<not specified>` for a tool call id it lost."""


def first_of(attributes: Attributes, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = attributes.get(name)
        if value is not None and value not in PLACEHOLDERS:
            return str(value)[:200]
    return None


def session_id_of(source: Source, attributes: Attributes) -> str | None:
    """The session the record names, as a valid session id: hashed when it is not one."""
    named = first_of(attributes, source.session_attributes)
    if named is None:
        return None
    if _SESSION_ID.match(named):
        return named
    return "c-" + hashlib.sha256(named.encode()).hexdigest()[:40]


def _metadata(attributes: Attributes) -> dict[str, Value]:
    """A tool's `metadata`, which some sources send as a JSON string."""
    metadata = attributes.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return {}
    return metadata if isinstance(metadata, dict) else {}


def _exit_code(failure: Failure, attributes: Attributes) -> int | None:
    """The exit code the record says, where the row says to look for one."""
    found: Value = None
    if failure.metadata:
        found = _metadata(attributes).get("exitCode")
    for name in failure.exit_codes:
        found = attributes.get(name) if found is None else found
    if found is None and failure.output is not None:
        text = attributes.get(failure.output[0])
        said = re.search(failure.output[1], text) if isinstance(text, str) else None
        found = int(said.group(1)) if said else None
    if isinstance(found, int | float) and not isinstance(found, bool):
        return int(found)
    return None


def tool_failure(source: Source, attributes: Attributes, status_error: str | None) -> str | None:
    """Why a tool call failed, as the row says its source tells it, else None."""
    failure = source.failure
    if failure.status and status_error is not None:
        return status_error
    exit_code = _exit_code(failure, attributes)
    said = (
        any(attributes.get(name) in _FALSE for name in failure.flags if name in attributes)
        or any(attributes.get(name) for name in failure.errors)
        or (failure.metadata and _metadata(attributes).get("isError") is True)
        or exit_code not in (None, 0)
    )
    if not said:
        return None
    reason = first_of(attributes, failure.reasons)
    if reason is None and exit_code not in (None, 0):
        reason = f"exit code {exit_code}"
    return reason or "the tool reported a failure"


def _number(attributes: Attributes, names: tuple[str, ...]) -> float | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"\d{1,15}(\.\d{1,12})?", value):
            return float(value)
    return None


def usage_from(source: Source, attributes: Attributes) -> dict[str, float]:
    """A model request's tokens and cost, by the row's names."""
    names = source.usage
    total_input = _number(attributes, names.input)
    if total_input is None and names.input_parts:
        parts = [_number(attributes, (name,)) for name in names.input_parts]
        if parts[0] is not None:
            total_input = sum(part or 0 for part in parts)
    figures = {
        "input_tokens": total_input,
        "output_tokens": _number(attributes, names.output),
        "cached_tokens": _number(attributes, names.cached),
        "cost_usd": _number(attributes, names.cost),
    }
    return {
        name: round(value, 6) if name == "cost_usd" else int(value)
        for name, value in figures.items()
        if value is not None
    }


def figures_of(source: Source, metric: str, attributes: Attributes) -> tuple[str, ...]:
    """The usage figures a point of this metric adds to, by the row (its own figures, then
    the generic row's); empty when the metric is not one the Psychologist uses."""
    kind = str(attributes.get("type") or attributes.get("gen_ai.token.type") or "")
    for figure in (*source.metrics, *GENAI.metrics):
        if figure.metric == metric and figure.type in (kind, ""):
            return figure.figures
    return ()
