"""A local HTTP server that speaks Anthropic's Messages API, scripted per test.

Development tooling for the tests that run real coding agents (Claude Code, under
`tests/agents/`) against a model we own; `cli/` is never deployed.

It answers as Anthropic documents the API:

- `POST /v1/messages` without `stream` answers one `message` object; with `"stream": true`
  it answers server-sent events in Anthropic's order: `message_start` (the message with
  empty `content` and the input usage), then per content block `content_block_start`,
  `content_block_delta` (`text_delta` for text, `input_json_delta` with `partial_json` for
  a `tool_use` block's input) and `content_block_stop`, a `ping` after the first block's
  start, then `message_delta` (`stop_reason`, `stop_sequence`, the output usage) and
  `message_stop`.
- A reply with tool uses ends `stop_reason: "tool_use"`, each a `tool_use` block with a
  `toolu_…` id, after the reply's text block if it has one; a text reply ends `end_turn`.
- The usage counts the request (about four characters a token) as Anthropic's prompt
  caching does: the prefix this request shares with an earlier one to the same model, up
  to its last `cache_control` breakpoint, is `cache_read_input_tokens`; the rest up to
  that breakpoint is `cache_creation_input_tokens`; what follows it is `input_tokens`.
- `POST /v1/messages/count_tokens` answers `{"input_tokens": N}`.
- An error is Anthropic's body, `{"type": "error", "error": {"type", "message"},
  "request_id"}`, with its status (400 `invalid_request_error`, 401
  `authentication_error`, 429 `rate_limit_error`, 529 `overloaded_error`, ...); every
  answer carries a `request-id` header.

Requests are told apart as Claude Code sends them: a request that offers `tools` is the
agent's main loop, and takes the next scripted reply (`answer_text`, `use_tool`, `fail`),
then the responder, then `default_text`. Any other (a side request without tools, such as
a title or topic for the session) takes the next `side_replies` entry, else a short plain
text, so that it never consumes the main loop's script. Claude Code 2.1.332 in `claude -p`
was seen to send only main-loop requests, always streamed, and no count_tokens call.
Every request is recorded (`requests`), other paths too (`other`, answered 404).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, ClassVar

from cli.stand_in import Answered, Request, StandIn, json_answer, sse_answer, tokens_of
from cli.stand_in import Recorded as BaseRecorded

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""Anthropic's error type by HTTP status (the API's documented table)."""
SIDE_TEXT = "Stand-in session"
"""What a side request (no `tools`) is answered when nothing is scripted for it."""


def error_body(status: int, message: str, request_id: str, error_type: str | None = None) -> bytes:
    error = {"type": error_type or ERROR_TYPES.get(status, "api_error"), "message": message}
    return json.dumps({"type": "error", "error": error, "request_id": request_id}).encode()


@dataclass(frozen=True)
class ToolUse:
    """A `tool_use` block the model sends: the tool's name and its input."""

    name: str
    input: dict[str, Any]
    id: str | None = None
    """The block's id; a fresh `toolu_…` when None."""


@dataclass
class Reply:
    status: int = 200
    text: str | None = None
    tool_uses: tuple[ToolUse, ...] = ()
    stop_reason: str | None = None
    """`tool_use` when the reply uses a tool, else `end_turn`, when None."""
    usage: dict[str, int] | None = None
    """The usage to report; measured from the request and the answer when None."""
    error_type: str | None = None
    """An error reply's `error.type`; the status's documented type when None."""
    message: str = "scripted failure"
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded(BaseRecorded):
    """A Messages request as recorded."""

    @property
    def main(self) -> bool:
        """The agent's main loop: the request offers tools."""
        return bool(self.body.get("tools"))

    @property
    def system(self) -> str:
        system = self.body.get("system") or ""
        if isinstance(system, str):
            return system
        return "\n".join(block.get("text", "") for block in system if isinstance(block, dict))

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages") or []
        return messages

    @property
    def tools(self) -> list[str]:
        return [str(tool.get("name")) for tool in self.body.get("tools") or []]

    def blocks(self, kind: str) -> list[dict[str, Any]]:
        """Every content block of this kind in the request's messages, in order."""
        found: list[dict[str, Any]] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                found.extend(b for b in content if isinstance(b, dict) and b.get("type") == kind)
        return found

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        return self.blocks("tool_result")

    @property
    def last_user_text(self) -> str:
        """The text of the last user message (its text blocks joined)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
            if texts:
                return "\n".join(texts)
        return ""


def segments(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as the cache sees it, in Anthropic's order (tools, system, messages):
    each block's text and whether it carries a `cache_control` breakpoint."""
    parts = [(json.dumps(t, sort_keys=True), "cache_control" in t) for t in body.get("tools") or []]
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    parts += [(json.dumps(b, sort_keys=True), "cache_control" in b) for b in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            marked = isinstance(block, dict) and "cache_control" in block
            text = json.dumps({k: v for k, v in block.items() if k != "cache_control"})
            parts.append((message.get("role", "") + text, marked))
    return parts


def measured_usage(body: dict[str, Any], earlier: list[str]) -> dict[str, int]:
    """Input usage as prompt caching reports it, given earlier requests' cacheable prefixes
    to the same model (`earlier`; this request's own is appended)."""
    parts = segments(body)
    breakpoint_at = max((i + 1 for i, (_, marked) in enumerate(parts) if marked), default=0)
    cacheable = "".join(text for text, _ in parts[:breakpoint_at])
    rest = "".join(text for text, _ in parts[breakpoint_at:])
    shared = 0
    for prefix in earlier:
        if cacheable.startswith(prefix):
            shared = max(shared, len(prefix))
    if cacheable:
        earlier.append(cacheable)
    read = tokens_of(cacheable[:shared]) if shared else 0
    created = tokens_of(cacheable) - read if cacheable else 0
    return {
        "input_tokens": max(tokens_of(rest), 1),
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
    }


def content_of(reply: Reply, ids: Iterator[str]) -> list[dict[str, Any]]:
    """The reply's content blocks: its text, then each tool use."""
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for use in reply.tool_uses:
        block_id = use.id or next(ids)
        content.append({"type": "tool_use", "id": block_id, "name": use.name, "input": use.input})
    return content


def message_of(
    model: str, content: list[dict[str, Any]], reply: Reply, usage: dict[str, int]
) -> dict[str, Any]:
    """The non-streamed answer: one `message` object."""
    uses_tool = any(block["type"] == "tool_use" for block in content)
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if uses_tool else "end_turn"),
        "stop_sequence": None,
        "usage": usage,
    }


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The streamed answer to `message`, event by event, as Anthropic sends it."""
    usage = message["usage"]
    start_usage = {**usage, "output_tokens": 1}
    started = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {**started, "usage": start_usage}})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": part} for part in chunks(block["text"], 16)]
        else:
            opening = {**block, "input": {}}
            encoded = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in chunks(encoded, 12)]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


@dataclass
class AnthropicTestServer(StandIn):
    title: ClassVar[str] = "Anthropic stand-in"
    replies: deque[Reply] = field(default_factory=deque)
    """Scripted answers of the main loop's requests (those that offer tools), in order."""
    side_replies: deque[Reply] = field(default_factory=deque)
    """Scripted answers of every other request."""
    responder: Callable[[Recorded], Reply] | None = None
    """Answers a main-loop request when no scripted reply is left."""
    default_text: str = "Done."
    """A main-loop request's answer when nothing is scripted and there is no responder."""
    requests: list[Recorded] = field(default_factory=list)
    other: list[Recorded] = field(default_factory=list)
    """Requests to any other path (answered 404), and count_tokens calls."""
    reported: list[dict[str, int]] = field(default_factory=list)
    """The usage of every successful answer, as it was sent."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    prefixes: dict[str, list[str]] = field(default_factory=dict)
    """Cacheable prefixes seen per model, for the prompt-cache usage."""
    tool_ids: Iterator[str] = field(
        default_factory=lambda: (f"toolu_stand_in_{n:04d}" for n in itertools.count(1))
    )

    # scripting -----------------------------------------------------------------
    def answer_text(self, text: str, **kwargs: Any) -> None:
        self.replies.append(Reply(text=text, **kwargs))

    def use_tool(
        self, name: str, tool_input: dict[str, Any], text: str | None = None, **kwargs: Any
    ) -> None:
        """The next main-loop answer asks for one tool call (after `text`, if any)."""
        self.replies.append(Reply(text=text, tool_uses=(ToolUse(name, tool_input),), **kwargs))

    def fail(
        self,
        status: int = 400,
        message: str = "scripted failure",
        times: int = 1,
        error_type: str | None = None,
    ) -> None:
        """The next main-loop answers are Anthropic's error body with this status."""
        self.replies.extend(
            Reply(status=status, message=message, error_type=error_type) for _ in range(times)
        )

    def respond_with(self, responder: Callable[[Recorded], Reply]) -> None:
        self.responder = responder

    def reset(self) -> None:
        with self.lock:
            self.replies.clear()
            self.side_replies.clear()
            self.responder = None
            self.requests.clear()
            self.other.clear()
            self.reported.clear()
            self.prefixes.clear()

    @property
    def main_requests(self) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.main]

    # answering -----------------------------------------------------------------
    def _next(self, recorded: Recorded) -> Reply:
        with self.lock:
            queue = self.replies if recorded.main else self.side_replies
            if queue:
                return queue.popleft()
            responder = self.responder if recorded.main else None
        if responder is not None:
            return responder(recorded)
        return Reply(text=self.default_text if recorded.main else SIDE_TEXT)

    def answer(self, recorded: Recorded) -> Answered:
        """The answer to one `POST /v1/messages`."""
        request_id = f"req_stand_in_{uuid.uuid4().hex[:20]}"
        with self.lock:
            self.requests.append(recorded)
        reply = self._next(recorded)
        time.sleep(reply.delay_s)
        headers = {"request-id": request_id, **reply.headers}
        if reply.status != HTTPStatus.OK:
            body = error_body(reply.status, reply.message, request_id, reply.error_type)
            return Answered(reply.status, body, headers)
        with self.lock:
            earlier = self.prefixes.setdefault(recorded.model, [])
            usage = measured_usage(recorded.body, earlier)
            content = content_of(reply, self.tool_ids)
        usage["output_tokens"] = max(tokens_of(json.dumps(content)), 1)
        if reply.usage is not None:
            usage.update(reply.usage)
        message = message_of(recorded.model, content, reply, usage)
        with self.lock:
            self.reported.append(dict(usage))
        if recorded.stream:
            return sse_answer(stream_events(message), headers)
        return json_answer(message, headers=headers)

    def count_tokens(self, recorded: Recorded) -> Answered:
        with self.lock:
            self.other.append(recorded)
        text = "".join(text for text, _ in segments(recorded.body))
        return Answered(200, json.dumps({"input_tokens": tokens_of(text)}).encode())

    # serving -------------------------------------------------------------------
    def unknown(self, request: Request) -> Answered:
        """Any other path: recorded in `other`, answered 404 in Anthropic's error shape."""
        with self.lock:
            self.other.append(recorded(request))
        message = f"Not found: {request.method} {request.path}"
        return Answered(404, error_body(404, message, "req_stand_in_unknown"))

    def respond(self, request: Request) -> Answered:
        if request.method != "POST":
            return self.unknown(request)
        if request.path == "/v1/messages/count_tokens":
            return self.count_tokens(recorded(request))
        if request.path != "/v1/messages":
            return self.unknown(request)
        asked = recorded(request)
        if not isinstance(asked.body.get("messages"), list):
            problem = "messages: Field required"
            answered = Answered(400, error_body(400, problem, "req_stand_in_invalid"))
        else:
            answered = self.answer(asked)
        asked.status, asked.sent = answered.status, answered.body
        return answered


def recorded(request: Request) -> Recorded:
    """A request as the stand-in records it."""
    return Recorded(request.path, request.json_body(), request.headers, request.raw)
