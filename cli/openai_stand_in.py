"""A local HTTP server that speaks OpenAI's Responses API, scripted per test.

Development tooling for the tests that run a real coding agent (Codex CLI, under
`tests/agents/`) against a model we own; `cli/` is never deployed.

It answers as OpenAI documents the API (the streaming guide,
https://developers.openai.com/api/docs/guides/streaming-responses?api-mode=responses, and the
streaming events' reference,
https://developers.openai.com/api/reference/resources/beta/subresources/responses/streaming-events):

- `POST /v1/responses` (or `/responses`) with `"stream": true` answers server-sent events, each
  an `event:` line with the event's type and a `data:` line with its JSON, which carries the
  same `type` and a `sequence_number` counted from 0: `response.created` and
  `response.in_progress` (the response object, `status: "in_progress"`, no output yet), then
  per output item `response.output_item.added`, its content (a message:
  `response.content_part.added`, `response.output_text.delta` pieces,
  `response.output_text.done`, `response.content_part.done`; a function call:
  `response.function_call_arguments.delta` pieces and `response.function_call_arguments.done`),
  `response.output_item.done`; and last `response.completed`, the whole response with its
  `usage` (`input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`,
  `output_tokens_details.reasoning_tokens`, `total_tokens`). Without `stream` it answers the
  completed response object as JSON.
- A scripted failure streams `response.created`, `response.in_progress` and then
  `response.failed`, whose response has `status: "failed"` and `error: {code, message}` (the
  JSON answer is that failed response). Codex 0.171 retries such a turn at once ("Reconnecting...
  1/5"), up to five times.
- A reply is a message with its text (`answer_text`), or function calls (`call_function`: a
  `function_call` item with an `fc_…` id, a `call_…` call id, the function's name and its
  arguments as a JSON string), after the reply's text if it has one.
- The usage counts the request's text (instructions, tools, every input item) at about four
  characters a token; `cached_tokens` is the prefix this request shares with an earlier one to
  the same model, as OpenAI's prompt caching reports it: none below 1,024 tokens, else in
  steps of 128 tokens. Scripted usage replaces the measured one.
- A request without `model` or `input` is `400` with OpenAI's error body
  (`{"error": {"message", "type", "param", "code"}}`).

Codex CLI 0.171 posts to `{base_url}/responses` (`base_url` ends `/v1`, as OpenAI's does) and
offers its shell as the function `exec_command` with arguments `{"cmd": "<shell command>"}`
(optional: `workdir`, `shell`, `login`, `tty`, `yield_time_ms`, `max_output_tokens`,
`sandbox_permissions`, `justification`, `prefix_rule`); it answers a call with a
`function_call_output` whose `output` reads "...Process exited with code N...". Its
instructions come as `developer` messages in `input`, not as `instructions`. It also posts
`{base_url}/analytics/codex/turn-costs`, answered `200 {}` and recorded in `other` like any
other path (those answered 404).

Every `/responses` request is recorded (`requests`: path, body, headers), and the usage of every
completed answer as sent (`reported`). Requests take the next scripted reply, then the
responder (`respond_with`), then `default_text`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, ClassVar

from cli.stand_in import (
    Answered,
    Request,
    StandIn,
    json_answer,
    shared_prefix,
    sse_answer,
    tokens_of,
)
from cli.stand_in import Recorded as BaseRecorded

SHELL_TOOL = "exec_command"
"""The function Codex CLI 0.171 runs shell commands through; its one required argument is
`cmd`, the command line."""
RESPONSES_PATHS = frozenset({"/v1/responses", "/responses"})
TURN_COSTS_PATHS = frozenset({"/v1/analytics/codex/turn-costs", "/analytics/codex/turn-costs"})
CACHE_MINIMUM = 1_024
"""The fewest tokens of a shared prefix that OpenAI's prompt caching reports as cached."""
CACHE_STEP = 128
"""Cached tokens are reported in steps of this many."""
TEXT_PIECE = 16
"""About how many characters each `response.output_text.delta` carries."""
ARGUMENTS_PIECE = 12
"""About how many characters each `response.function_call_arguments.delta` carries."""


@dataclass(frozen=True)
class Usage:
    """Token counts to report instead of measured ones."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def body(self) -> dict[str, Any]:
        """The `usage` object as the API sends it."""
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass(frozen=True)
class FunctionCall:
    """A function the model calls: its name and arguments (sent as a JSON string)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    """The `error` of a failed response."""

    code: str = "server_error"
    message: str = "The server had an error while processing your request."


@dataclass(frozen=True)
class Reply:
    text: str | None = None
    calls: tuple[FunctionCall, ...] = ()
    """Function calls sent after the text (if any), in order."""
    usage: Usage | None = None
    """The usage to report; measured from the request and the answer when None."""
    failure: Failure | None = None
    """Answer a failed response (`response.failed`) instead."""


@dataclass
class Recorded(BaseRecorded):
    """A Responses request as recorded."""

    @property
    def reasoning_effort(self) -> str | None:
        """`reasoning.effort` as asked (`low`, `medium`, `high`, ...), None when not."""
        effort = (self.body.get("reasoning") or {}).get("effort")
        return None if effort is None else str(effort)

    @property
    def instructions(self) -> str:
        """The `instructions` field (Codex 0.171 sends its instructions as `developer`
        messages in `input` instead)."""
        return str(self.body.get("instructions") or "")

    @property
    def input(self) -> list[dict[str, Any]]:
        """The input items (a plain string input is one user message)."""
        given = self.body.get("input")
        if isinstance(given, str):
            return [{"type": "message", "role": "user", "content": given}]
        return [item for item in given or [] if isinstance(item, dict)]

    @property
    def tools(self) -> list[str]:
        """The names of the functions offered."""
        return [str(tool["name"]) for tool in self.body.get("tools") or [] if "name" in tool]

    @property
    def function_outputs(self) -> list[dict[str, Any]]:
        """The `function_call_output` items: the results of earlier calls, in order."""
        return [item for item in self.input if item.get("type") == "function_call_output"]

    def texts(self, role: str) -> list[str]:
        """The text of every message from `role`, in order."""
        return [message_text(item) for item in self.input if item.get("role") == role]


def message_text(item: dict[str, Any]) -> str:
    """A message item's text: its content's text parts joined."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def request_text(body: dict[str, Any]) -> str:
    """What the usage counts of a request, in the order the model reads it: instructions,
    tools, then every input item."""
    text = str(body.get("instructions") or "") + json.dumps(body.get("tools") or [])
    given = body.get("input")
    if isinstance(given, str):
        return text + given
    return text + "".join(json.dumps(item, sort_keys=True) for item in given or [])


def cached_tokens(text: str, earlier: list[str]) -> int:
    """The tokens of the longest prefix `text` shares with an earlier prompt, as prompt
    caching reports them; `text` joins `earlier`."""
    shared = max((shared_prefix(text, prompt) for prompt in earlier), default=0)
    earlier.append(text)
    tokens = tokens_of(text[:shared]) if shared else 0
    return 0 if tokens < CACHE_MINIMUM else tokens - tokens % CACHE_STEP


def error_body(status: int, message: str, param: str | None = None) -> bytes:
    """OpenAI's error body."""
    kind = "server_error" if status >= HTTPStatus.INTERNAL_SERVER_ERROR else "invalid_request_error"
    error = {"message": message, "type": kind, "param": param, "code": None}
    return json.dumps({"error": error}).encode()


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def output_items(reply: Reply) -> list[dict[str, Any]]:
    """The completed output items of a reply: its message, then each function call."""
    items: list[dict[str, Any]] = []
    if reply.text:
        part = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
        message = {"type": "message", "role": "assistant", "content": [part]}
        items.append({"id": new_id("msg"), **message, "status": "completed"})
    items.extend(function_call_item(call) for call in reply.calls)
    return items


def function_call_item(call: FunctionCall) -> dict[str, Any]:
    """A completed `function_call` output item, with fresh ids."""
    return {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": new_id("call"),
        "name": call.name,
        "arguments": json.dumps(call.arguments),
        "status": "completed",
    }


def response_of(request: dict[str, Any], status: str) -> dict[str, Any]:
    """A response object for `request`, before its output and usage."""
    return {
        "id": new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "model": request.get("model"),
        "output": [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "store": request.get("store", True),
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "usage": None,
    }


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that stream one completed output item, from its addition to its done."""
    at = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "function_call":
        opened = {**item, "arguments": "", "status": "in_progress"}
        arguments = item["arguments"]
        middle = [
            {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            for piece in pieces(arguments, ARGUMENTS_PIECE)
        ]
        middle.append(
            {
                "type": "response.function_call_arguments.done",
                **at,
                "name": item["name"],
                "arguments": arguments,
            }
        )
    else:
        opened = {**item, "content": [], "status": "in_progress"}
        part = item["content"][0]
        at_part = {**at, "content_index": 0}
        middle = [{"type": "response.content_part.added", **at_part, "part": {**part, "text": ""}}]
        middle += [
            {"type": "response.output_text.delta", **at_part, "delta": piece, "logprobs": []}
            for piece in pieces(part["text"], TEXT_PIECE)
        ]
        middle.append(
            {"type": "response.output_text.done", **at_part, "text": part["text"], "logprobs": []}
        )
        middle.append({"type": "response.content_part.done", **at_part, "part": part})
    return [
        {"type": "response.output_item.added", "output_index": index, "item": opened},
        *middle,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def stream_events(started: dict[str, Any], finished: dict[str, Any]) -> list[dict[str, Any]]:
    """A response streamed, event by event with its sequence number: `started` is the
    response in progress, `finished` the completed or failed one."""
    events = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(finished["output"]):
        events += item_events(index, item)
    last = "response.failed" if finished["status"] == "failed" else "response.completed"
    events.append({"type": last, "response": finished})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


@dataclass
class OpenAITestServer(StandIn):
    title: ClassVar[str] = "OpenAI stand-in"
    replies: deque[Reply] = field(default_factory=deque)
    """Scripted answers, in order."""
    responder: Callable[[Recorded], Reply] | None = None
    """Answers a request when no scripted reply is left."""
    default_text: str = "Done."
    """The answer when nothing is scripted and there is no responder."""
    requests: list[Recorded] = field(default_factory=list)
    """Every `/responses` request, in order."""
    other: list[Recorded] = field(default_factory=list)
    """Requests to any other path: Codex's turn costs (answered 200), the rest (404)."""
    reported: list[dict[str, Any]] = field(default_factory=list)
    """The usage of every completed answer, as it was sent."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    prompts: dict[str, list[str]] = field(default_factory=dict)
    """Earlier prompts per model, for the cached tokens."""

    # scripting -----------------------------------------------------------------
    def answer_text(self, text: str, usage: Usage | None = None) -> None:
        """The next answer is a message with this text."""
        self.replies.append(Reply(text=text, usage=usage))

    def call_function(
        self,
        name: str,
        arguments: dict[str, Any],
        text: str | None = None,
        usage: Usage | None = None,
    ) -> None:
        """The next answer calls one function (after `text`, if any)."""
        self.replies.append(Reply(text=text, calls=(FunctionCall(name, arguments),), usage=usage))

    def run_command(self, command: str, text: str | None = None) -> None:
        """The next answer asks Codex to run a shell command."""
        self.call_function(SHELL_TOOL, {"cmd": command}, text)

    def fail(
        self,
        code: str = "server_error",
        message: str = "The server had an error while processing your request.",
        times: int = 1,
    ) -> None:
        """The next answers are failed responses (`response.failed`) with this error."""
        self.replies.extend(Reply(failure=Failure(code, message)) for _ in range(times))

    def respond_with(self, responder: Callable[[Recorded], Reply]) -> None:
        self.responder = responder

    def reset(self) -> None:
        with self.lock:
            self.replies.clear()
            self.responder = None
            self.requests.clear()
            self.other.clear()
            self.reported.clear()
            self.prompts.clear()

    # answering -----------------------------------------------------------------
    def _next(self, recorded: Recorded) -> Reply:
        with self.lock:
            if self.replies:
                return self.replies.popleft()
            responder = self.responder
        if responder is not None:
            return responder(recorded)
        return Reply(text=self.default_text)

    def _usage(self, recorded: Recorded, reply: Reply, output: list[dict[str, Any]]) -> Usage:
        """The reply's scripted usage, else the request and the output measured."""
        if reply.usage is not None:
            return reply.usage
        text = request_text(recorded.body)
        with self.lock:
            cached = cached_tokens(text, self.prompts.setdefault(recorded.model, []))
        return Usage(max(tokens_of(text), 1), max(tokens_of(json.dumps(output)), 1), cached)

    def answer(self, recorded: Recorded) -> Answered:
        """The answer to one `POST .../responses`."""
        with self.lock:
            self.requests.append(recorded)
        reply = self._next(recorded)
        started = response_of(recorded.body, "in_progress")
        headers = {"x-request-id": new_id("req")}
        if reply.failure is not None:
            error = {"code": reply.failure.code, "message": reply.failure.message}
            finished = {**started, "status": "failed", "error": error}
        else:
            output = output_items(reply)
            usage = self._usage(recorded, reply, output).body()
            finished = {**started, "status": "completed", "output": output, "usage": usage}
            with self.lock:
                self.reported.append(usage)
        if recorded.stream:
            events = stream_events(started, finished)
            return sse_answer([(event["type"], event) for event in events], headers)
        return json_answer(finished, headers=headers)

    # serving -------------------------------------------------------------------
    def unknown(self, request: Request) -> Answered:
        """Any other path: recorded in `other`, answered 404 in OpenAI's error shape."""
        with self.lock:
            self.other.append(recorded(request))
        message = f"Invalid URL ({request.method} {request.path})"
        return Answered(404, error_body(404, message))

    def respond(self, request: Request) -> Answered:
        if request.method != "POST":
            return self.unknown(request)
        if request.path in TURN_COSTS_PATHS:
            with self.lock:
                self.other.append(recorded(request))
            return json_answer({})
        if request.path not in RESPONSES_PATHS:
            return self.unknown(request)
        asked = recorded(request)
        missing = next((name for name in ("model", "input") if name not in asked.body), None)
        if missing is not None:
            problem = f"Missing required parameter: '{missing}'."
            answered = Answered(400, error_body(400, problem, missing))
        else:
            answered = self.answer(asked)
        asked.status, asked.sent = answered.status, answered.body
        return answered


def recorded(request: Request) -> Recorded:
    """A request as the stand-in records it."""
    return Recorded(request.path, request.json_body(), request.headers, request.raw)
