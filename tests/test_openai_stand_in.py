"""The OpenAI Responses API stand-in answers as OpenAI documents the API: the streamed
events' order, types and sequence numbers, `function_call` items, `response.failed`, the
usage; it is scripted and recorded as the agent tests rely on; and the real Codex CLI runs
against it (`tests/agents/codex.py`).

The `openai` client is not installed here, so the HTTP tests speak plain urllib and read the
event stream themselves."""

from __future__ import annotations

import json
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.openai_stand_in import (
    CACHE_MINIMUM,
    CACHE_STEP,
    SHELL_TOOL,
    FunctionCall,
    OpenAITestServer,
    Recorded,
    Reply,
    Usage,
    cached_tokens,
    output_items,
    response_of,
    stream_events,
)
from tests.agents.codex import NO_EXPORT, Telemetry, run_codex, write_config

HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-stand-in"}
TOOLS = [
    {
        "type": "function",
        "name": SHELL_TOOL,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]
MESSAGE_EVENTS = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]


def request(**body: Any) -> dict[str, Any]:
    return {
        "model": "gpt-5.5",
        "input": [{"type": "message", "role": "user", "content": "List the folder."}],
        "tools": TOOLS,
        **body,
    }


def streamed(reply: Reply) -> list[dict[str, Any]]:
    started = response_of(request(), "in_progress")
    return stream_events(started, {**started, "status": "completed", "output": output_items(reply)})


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """The event types in order, a run of deltas counted once."""
    found: list[str] = []
    for event in events:
        if not (event["type"].endswith(".delta") and found and found[-1] == event["type"]):
            found.append(event["type"])
    return found


@pytest.mark.pure
def test_a_text_answer_streams_in_the_documented_order_with_sequence_numbers() -> None:
    events = streamed(Reply(text="The folder holds three files."))
    assert kinds(events) == [
        "response.created",
        "response.in_progress",
        *MESSAGE_EVENTS,
        "response.completed",
    ]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "The folder holds three files."
    assert events[0]["response"]["status"] == "in_progress"
    assert events[0]["response"]["output"] == []
    [message] = events[-1]["response"]["output"]
    assert message["id"].startswith("msg_")
    assert message["content"][0]["text"] == "The folder holds three files."


@pytest.mark.pure
def test_a_function_call_streams_its_arguments_after_the_text() -> None:
    reply = Reply(text="Listing.", calls=(FunctionCall(SHELL_TOOL, {"cmd": "ls -la /srv"}),))
    events = streamed(reply)
    assert kinds(events) == [
        "response.created",
        "response.in_progress",
        *MESSAGE_EVENTS,
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [e["output_index"] for e in added] == [0, 1]
    opened = added[1]
    assert (opened["item"]["arguments"], opened["item"]["status"]) == ("", "in_progress")
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) > 1
    assert json.loads("".join(d["delta"] for d in deltas)) == {"cmd": "ls -la /srv"}
    call = events[-1]["response"]["output"][1]
    assert call["type"] == "function_call"
    assert call["id"].startswith("fc_")
    assert call["call_id"].startswith("call_")
    assert (call["name"], json.loads(call["arguments"])) == (SHELL_TOOL, {"cmd": "ls -la /srv"})
    assert {d["item_id"] for d in deltas} == {call["id"]}


@pytest.mark.pure
def test_a_shared_prefix_is_cached_from_the_minimum_in_steps() -> None:
    earlier: list[str] = []
    prompt = "x" * 4 * (CACHE_MINIMUM + 200)
    assert cached_tokens(prompt, earlier) == 0
    assert cached_tokens(prompt + " and more", earlier) == CACHE_MINIMUM + 128
    assert (CACHE_MINIMUM + 128) % CACHE_STEP == 0
    short = "y" * 4 * (CACHE_MINIMUM - 1)
    assert cached_tokens(short, earlier) == 0
    assert cached_tokens(short + "!", earlier) == 0


@pytest.mark.pure
def test_the_config_names_the_provider_and_every_exporter(tmp_path: Path) -> None:
    telemetry = Telemetry("http://127.0.0.1:9/otlp", {"authorization": "Bearer token"})
    config = tomllib.loads(write_config(tmp_path, "http://127.0.0.1:8", telemetry).read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:8/v1"
    assert provider["wire_api"] == "responses"
    assert config["analytics"] == {"enabled": False}
    assert config["check_for_update_on_startup"] is False
    assert config["otel"]["metrics_exporter"] == {
        "otlp-http": {
            "endpoint": "http://127.0.0.1:9/otlp/v1/metrics",
            "protocol": "json",
            "headers": {"authorization": "Bearer token"},
        }
    }
    assert config["otel"]["exporter"]["otlp-http"]["endpoint"].endswith("/otlp/v1/logs")
    assert config["otel"]["trace_exporter"]["otlp-http"]["endpoint"].endswith("/otlp/v1/traces")
    quiet = tomllib.loads(write_config(tmp_path, "http://127.0.0.1:8", None).read_text())
    assert quiet["otel"] == NO_EXPORT


# -- over HTTP -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAITestServer]:
    started = OpenAITestServer().start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def stand_in(server: OpenAITestServer) -> OpenAITestServer:
    server.reset()
    return server


def post(
    stand_in: OpenAITestServer, body: dict[str, Any], path: str = "/v1/responses"
) -> tuple[int, dict[str, str], bytes]:
    sent = urllib.request.Request(
        stand_in.url + path, data=json.dumps(body).encode(), headers=HEADERS, method="POST"
    )
    return send(sent)


def send(sent: urllib.request.Request) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(sent, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def read_stream(raw: bytes) -> list[dict[str, Any]]:
    """The events of a server-sent event stream, each `event:` name checked against its
    data's `type`."""
    events = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        events.append(data)
    return events


def test_a_streamed_answer_is_an_event_stream_ending_with_the_usage(
    stand_in: OpenAITestServer,
) -> None:
    stand_in.call_function(SHELL_TOOL, {"cmd": "exit 2"})
    stand_in.answer_text("The command failed.")

    status, headers, raw = post(stand_in, request(stream=True))
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert headers["x-request-id"].startswith("req_")
    events = read_stream(raw)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"
    completed = events[-1]["response"]
    assert (completed["status"], completed["model"]) == ("completed", "gpt-5.5")
    [call] = completed["output"]
    assert (call["name"], json.loads(call["arguments"])) == (SHELL_TOOL, {"cmd": "exit 2"})
    usage = completed["usage"]
    assert set(usage) == {
        "input_tokens",
        "input_tokens_details",
        "output_tokens",
        "output_tokens_details",
        "total_tokens",
    }
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert stand_in.reported == [usage]

    status, headers, raw = post(stand_in, request())
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    answer = json.loads(raw)
    assert (answer["object"], answer["status"]) == ("response", "completed")
    assert answer["output"][0]["content"][0]["text"] == "The command failed."


def test_a_scripted_failure_is_a_failed_response_with_its_error(
    stand_in: OpenAITestServer,
) -> None:
    stand_in.fail(code="rate_limit_exceeded", message="Slow down.", times=2)
    _, _, raw = post(stand_in, request(stream=True))
    events = read_stream(raw)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.failed",
    ]
    failed = events[-1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "rate_limit_exceeded", "message": "Slow down."}
    _, _, raw = post(stand_in, request())
    assert json.loads(raw)["error"]["code"] == "rate_limit_exceeded"
    _, _, raw = post(stand_in, request())
    assert json.loads(raw)["status"] == "completed"
    assert len(stand_in.reported) == 1


def test_the_usage_counts_the_request_unless_scripted(stand_in: OpenAITestServer) -> None:
    long_input = [{"type": "message", "role": "user", "content": "word " * 2_000}]
    _, _, raw = post(stand_in, request(input=long_input))
    measured = json.loads(raw)["usage"]
    assert 2_500 <= measured["input_tokens"] <= 2_700
    assert measured["input_tokens_details"]["cached_tokens"] == 0
    _, _, raw = post(stand_in, request(input=long_input))
    assert json.loads(raw)["usage"]["input_tokens_details"]["cached_tokens"] >= CACHE_MINIMUM

    stand_in.answer_text("Done.", usage=Usage(1200, 40, cached_tokens=300, reasoning_tokens=10))
    _, _, raw = post(stand_in, request(stream=True))
    assert read_stream(raw)[-1]["response"]["usage"] == {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 300},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 10},
        "total_tokens": 1240,
    }


def test_every_request_is_recorded_with_its_model_effort_and_input(
    stand_in: OpenAITestServer,
) -> None:
    body = request(
        model="gpt-5.4", instructions="You are Codex.", reasoning={"effort": "high"}, stream=True
    )
    post(stand_in, body)
    [recorded] = stand_in.requests
    assert (recorded.model, recorded.reasoning_effort) == ("gpt-5.4", "high")
    assert recorded.instructions == "You are Codex."
    assert recorded.texts("user") == ["List the folder."]
    assert recorded.tools == [SHELL_TOOL]
    assert recorded.header("Authorization") == "Bearer sk-stand-in"
    assert recorded.status == 200
    assert read_stream(recorded.sent)[-1]["response"]["output"][0]["content"][0]["text"] == "Done."


def test_a_responder_answers_once_the_script_is_spent_and_reset_forgets_it(
    stand_in: OpenAITestServer,
) -> None:
    def echo(recorded: Recorded) -> Reply:
        return Reply(text=f"You said: {recorded.texts('user')[-1]}")

    stand_in.respond_with(echo)
    _, _, raw = post(stand_in, request())
    assert json.loads(raw)["output"][0]["content"][0]["text"] == "You said: List the folder."
    stand_in.reset()
    _, _, raw = post(stand_in, request())
    assert json.loads(raw)["output"][0]["content"][0]["text"] == stand_in.default_text
    assert len(stand_in.requests) == 1


def test_turn_costs_are_taken_and_other_paths_refused(stand_in: OpenAITestServer) -> None:
    status, _, raw = post(stand_in, {"turn_ids": ["t1"]}, "/v1/analytics/codex/turn-costs")
    assert (status, json.loads(raw)) == (200, {})
    status, _, raw = post(stand_in, request(), "/v1/chat/completions")
    assert status == 404
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"
    status, _, _ = send(urllib.request.Request(stand_in.url + "/v1/responses"))
    assert status == 404
    assert [(r.path, r.body) for r in stand_in.other][:2] == [
        ("/v1/analytics/codex/turn-costs", {"turn_ids": ["t1"]}),
        ("/v1/chat/completions", request()),
    ]
    assert len(stand_in.other) == 3
    assert stand_in.requests == []


def test_a_request_without_a_model_is_refused(stand_in: OpenAITestServer) -> None:
    status, _, raw = post(stand_in, {"input": "Hello."})
    assert status == 400
    assert json.loads(raw)["error"] == {
        "message": "Missing required parameter: 'model'.",
        "type": "invalid_request_error",
        "param": "model",
        "code": None,
    }


# -- the real Codex CLI ------------------------------------------------------------------


def test_codex_runs_a_scripted_failing_command_with_the_model_and_effort_asked(
    stand_in: OpenAITestServer, tmp_path: Path
) -> None:
    stand_in.run_command("echo failing >&2; exit 2")
    stand_in.answer_text("The command failed with exit code 2.")

    run = run_codex(
        "Run the failing command.",
        base_url=stand_in.url,
        home=tmp_path,
        model="gpt-5.5",
        config=['model_reasoning_effort="low"'],
    )

    assert run.process.returncode == 0, run.process.stderr
    assert {(r.model, r.reasoning_effort) for r in stand_in.requests} == {("gpt-5.5", "low")}
    assert len(stand_in.requests) == 2
    assert "Run the failing command." in stand_in.requests[0].texts("user")
    [command] = run.completed("command_execution")
    assert "exit 2" in command["command"]
    assert (command["exit_code"], command["status"]) == (2, "failed")
    [output] = stand_in.requests[1].function_outputs
    assert "Process exited with code 2" in output["output"]
    assert run.final_text == "The command failed with exit code 2."
    assert run.thread_id == stand_in.requests[0].header("session-id")
