"""The Anthropic Messages API stand-in answers as Anthropic documents the API: the event
stream's order and shapes, `tool_use` blocks, prompt-cache usage, the error body; and it
is scripted and recorded as the agent tests rely on (`tests/agents/claude.py`).

The `anthropic` client is not installed here, so the HTTP tests speak plain urllib."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from cli.anthropic_stand_in import (
    AnthropicTestServer,
    Reply,
    ToolUse,
    content_of,
    measured_usage,
    message_of,
    stream_events,
)
from cli.stand_in import parse_events

TOOLS = [
    {
        "name": "Bash",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
HEADERS = {
    "content-type": "application/json",
    "x-api-key": "sk-ant-api03-stand-in",
    "anthropic-version": "2023-06-01",
}


def request(**body: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "List the folder."}],
        **body,
    }


def ids() -> Iterator[str]:
    yield from (f"toolu_{n}" for n in range(1, 100))


def streamed(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = message_of("claude-sonnet-4-5", content_of(reply, ids()), reply, usage)
    message["usage"]["output_tokens"] = 7
    return stream_events(message)


# -- the event stream's shapes (pure) ---------------------------------------------------


@pytest.mark.pure
def test_a_streamed_text_answer_comes_in_anthropics_event_order() -> None:
    """message_start (empty content, input usage), the block's start, a ping, its text
    deltas, its stop, message_delta (stop reason and output usage), message_stop."""
    events = streamed(Reply(text="The folder does not exist, as ls said."))
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    assert all(data["type"] == name for name, data in events)

    started = events[0][1]["message"]
    assert started["content"] == []
    assert started["stop_reason"] is None
    assert started["role"] == "assistant"
    assert started["id"].startswith("msg_")
    assert started["usage"]["input_tokens"] == 10
    assert {"cache_creation_input_tokens", "cache_read_input_tokens"} <= set(started["usage"])
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert all(delta["type"] == "text_delta" for delta in deltas)
    assert "".join(delta["text"] for delta in deltas) == "The folder does not exist, as ls said."
    finished = events[-2][1]
    assert finished["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert finished["usage"] == {"output_tokens": 7}


@pytest.mark.pure
def test_a_streamed_tool_use_sends_its_input_as_json_deltas_and_stops_for_the_tool() -> None:
    """A `tool_use` block starts with its id, name and empty input; its input arrives as
    `input_json_delta` pieces that join into the JSON; the message stops `tool_use`."""
    command = {"command": "ls /nonexistent-evidencia", "description": "List it"}
    events = streamed(Reply(text="Listing it.", tool_uses=(ToolUse("Bash", command),)))
    starts = [data for name, data in events if name == "content_block_start"]
    assert [start["index"] for start in starts] == [0, 1]
    assert starts[1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Bash",
        "input": {},
    }
    pieces = [
        data["delta"]
        for name, data in events
        if name == "content_block_delta" and data["index"] == 1
    ]
    assert {piece["type"] for piece in pieces} == {"input_json_delta"}
    assert len(pieces) > 2
    assert json.loads("".join(piece["partial_json"] for piece in pieces)) == command
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.pure
def test_the_usage_reads_the_cached_prefix_up_to_the_last_breakpoint() -> None:
    """The first request writes its prefix up to the last `cache_control` to the cache;
    the next one that shares it reads it back, and only what follows is input."""
    system = [{"type": "text", "text": "You are a coding agent. " * 200, "cache_control": {}}]
    earlier: list[str] = []
    first = measured_usage(request(system=system), earlier)
    assert first["cache_read_input_tokens"] == 0
    assert first["cache_creation_input_tokens"] > 1000
    follow_up = request(
        system=system,
        messages=[
            {"role": "user", "content": "List the folder."},
            {"role": "assistant", "content": "It is empty."},
            {"role": "user", "content": "Thanks."},
        ],
    )
    second = measured_usage(follow_up, earlier)
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] > first["input_tokens"]
    uncached = measured_usage(request(), [])
    assert uncached["cache_creation_input_tokens"] == uncached["cache_read_input_tokens"] == 0


@pytest.mark.pure
def test_a_parsed_stream_gives_back_every_event() -> None:
    events = streamed(Reply(text="Done."))
    encoded = "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()
    assert parse_events(encoded) == events


# -- over HTTP -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[AnthropicTestServer]:
    started = AnthropicTestServer().start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def stand_in(server: AnthropicTestServer) -> AnthropicTestServer:
    server.reset()
    return server


def post(
    stand_in: AnthropicTestServer, body: dict[str, Any], path: str = "/v1/messages"
) -> tuple[int, dict[str, str], bytes]:
    sent = urllib.request.Request(
        stand_in.url + path, data=json.dumps(body).encode(), headers=HEADERS, method="POST"
    )
    try:
        with urllib.request.urlopen(sent, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_scripted_tool_uses_then_text_answer_the_main_loop_in_order(
    stand_in: AnthropicTestServer,
) -> None:
    """Requests that offer tools take the script in order, streamed or not; the answer
    names the model asked for and carries the four usage counts."""
    stand_in.use_tool("Bash", {"command": "exit 2"})
    stand_in.answer_text("The command failed.")

    status, headers, raw = post(stand_in, request(tools=TOOLS))
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["request-id"].startswith("req_")
    message = json.loads(raw)
    assert message["type"] == "message"
    assert message["model"] == "claude-sonnet-4-5"
    assert message["stop_reason"] == "tool_use"
    [block] = message["content"]
    assert block["type"] == "tool_use"
    assert block["id"].startswith("toolu_")
    assert (block["name"], block["input"]) == ("Bash", {"command": "exit 2"})
    assert set(message["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }

    status, headers, raw = post(stand_in, request(tools=TOOLS, stream=True))
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    events = parse_events(raw)
    text = "".join(d["delta"].get("text", "") for n, d in events if n == "content_block_delta")
    assert text == "The command failed."
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"


def test_every_request_is_recorded_with_its_model_system_messages_and_headers(
    stand_in: AnthropicTestServer,
) -> None:
    system = [{"type": "text", "text": "You are Claude Code."}]
    post(stand_in, request(system=system, tools=TOOLS, model="claude-opus-4-6"))
    [recorded] = stand_in.requests
    assert recorded.model == "claude-opus-4-6"
    assert recorded.system == "You are Claude Code."
    assert recorded.last_user_text == "List the folder."
    assert recorded.tools == ["Bash"]
    assert recorded.header("X-API-Key") == "sk-ant-api03-stand-in"
    assert recorded.header("anthropic-version") == "2023-06-01"
    assert recorded.status == 200
    assert json.loads(recorded.sent)["content"][0]["text"] == "Done."


def test_a_request_without_tools_takes_no_scripted_reply(stand_in: AnthropicTestServer) -> None:
    """A side request (a title, a topic) gets plain text; the main loop's script waits."""
    stand_in.use_tool("Bash", {"command": "exit 2"})
    _, _, raw = post(stand_in, request())
    assert json.loads(raw)["content"] == [{"type": "text", "text": "Stand-in session"}]
    assert len(stand_in.replies) == 1
    _, _, raw = post(stand_in, request(tools=TOOLS))
    assert json.loads(raw)["content"][0]["name"] == "Bash"
    assert [r.main for r in stand_in.requests] == [False, True]


def test_a_scripted_failure_is_anthropics_error_body(stand_in: AnthropicTestServer) -> None:
    stand_in.fail(400, "max_tokens: must be positive")
    stand_in.fail(529, "Overloaded")
    status, headers, raw = post(stand_in, request(tools=TOOLS, stream=True))
    assert status == 400
    body = json.loads(raw)
    assert body["type"] == "error"
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "max_tokens: must be positive",
    }
    assert body["request_id"] == headers["request-id"]
    status, _, raw = post(stand_in, request(tools=TOOLS))
    assert status == 529
    assert json.loads(raw)["error"]["type"] == "overloaded_error"


def test_a_request_without_messages_is_refused_as_invalid(stand_in: AnthropicTestServer) -> None:
    status, _, raw = post(stand_in, {"model": "claude-sonnet-4-5", "max_tokens": 10})
    assert status == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"


def test_count_tokens_and_unknown_paths(stand_in: AnthropicTestServer) -> None:
    status, _, raw = post(stand_in, request(), "/v1/messages/count_tokens")
    assert status == 200
    assert json.loads(raw)["input_tokens"] > 0
    status, _, raw = post(stand_in, {}, "/v1/complete")
    assert status == 404
    assert json.loads(raw)["error"]["type"] == "not_found_error"
    assert [r.path for r in stand_in.other] == ["/v1/messages/count_tokens", "/v1/complete"]
    assert stand_in.requests == []


def test_a_responder_answers_once_the_script_is_spent(stand_in: AnthropicTestServer) -> None:
    """A responder sees the request: here it answers with the tool results it was sent."""

    def echo(recorded: Any) -> Reply:
        return Reply(text=f"{len(recorded.tool_results)} results")

    stand_in.respond_with(echo)
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x", "is_error": True}
    messages = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}],
        },
        {"role": "user", "content": [result]},
    ]
    _, _, raw = post(stand_in, request(tools=TOOLS, messages=messages))
    assert json.loads(raw)["content"][0]["text"] == "1 results"
    assert stand_in.requests[0].tool_results == [result]
