"""The Gemini stand-in's own scripting, as the tests rely on it."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai import errors, types

from cli.gemini_stand_in import (
    PURPOSES,
    THOUGHT_SIGNATURE,
    Batch,
    GeminiTestServer,
    Recorded,
    stream_chunks,
)
from shared.clients import gemini
from shared.instance import settings
from tests.agents.gemini import run_gemini


def ask_once() -> str | None:
    config = types.GenerateContentConfig(response_mime_type="application/json")
    reply = gemini().models.generate_content(
        model=settings().gemini_model, contents="Say it.", config=config
    )
    return reply.text


def test_a_held_answer_is_sent_only_once_its_gate_opens(gemini_server: GeminiTestServer) -> None:
    """The gate says when the call it holds has arrived, and holds it until opened."""
    gate = gemini_server.held_answer_json({"said": "now"})
    assert not gate.reached.is_set()
    with ThreadPoolExecutor(max_workers=1) as pool:
        asked = pool.submit(ask_once)
        assert gate.wait_reached(timeout=30)
        assert len(gemini_server.requests) == 1
        assert not asked.done(), "answered before its gate opened"
        gate.open()
        assert asked.result(timeout=30) == '{"said": "now"}'


# -- the Batch API ------------------------------------------------------------------------


def inline(prompt: str, **metadata: str) -> types.InlinedRequestDict:
    request: types.InlinedRequestDict = {
        "contents": prompt,
        "config": {"response_mime_type": "application/json"},
    }
    if metadata:
        request["metadata"] = metadata
    return request


def create_batch(*prompts: str) -> types.BatchJob:
    return gemini().batches.create(
        model=settings().gemini_model,
        src=[inline(prompt) for prompt in prompts],
        config={"display_name": "stand-in batch"},
    )


def operation(server: GeminiTestServer, name: str) -> dict[str, Any]:
    """The batch's operation as sent, for what the library does not keep."""
    body: dict[str, Any] = httpx.get(f"{server.url}/v1beta/{name}").json()
    return body


def test_a_batch_is_pending_then_reports_each_answer_in_order_with_its_usage(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.answer_json({"said": "first"})
    gemini_server.answer_json({"said": "second"})
    job = gemini().batches.create(
        model=settings().gemini_model,
        src=[inline("Say one.", key="a"), inline("Say two.", key="b")],
        config={"display_name": "nightly"},
    )
    assert job.state == types.JobState.JOB_STATE_PENDING
    assert job.name is not None
    assert job.name.startswith("batches/")
    assert (job.display_name, job.model) == ("nightly", f"models/{settings().gemini_model}")
    assert job.dest is None
    assert [(r.prompt, r.batch) for r in gemini_server.requests] == [
        ("Say one.", job.name),
        ("Say two.", job.name),
    ]
    assert gemini_server.reported_usage()["inputTokens"] == 0, "counted before it reported"

    done = gemini().batches.get(name=job.name)

    assert done.state == types.JobState.JOB_STATE_SUCCEEDED
    assert done.dest is not None
    assert done.dest.inlined_responses is not None
    answers = done.dest.inlined_responses
    assert [json.loads(a.response.text or "") for a in answers if a.response] == [
        {"said": "first"},
        {"said": "second"},
    ]
    assert [a.metadata for a in answers] == [{"key": "a"}, {"key": "b"}]
    usage = [a.response.usage_metadata for a in answers if a.response]
    sent = [json.loads(r.sent)["usageMetadata"] for r in gemini_server.requests]
    assert [u.prompt_token_count for u in usage if u] == [s["promptTokenCount"] for s in sent]
    assert gemini_server.reported_usage()["inputTokens"] == sum(
        u.prompt_token_count or 0 for u in usage if u
    )
    assert gemini_server.batches[job.name].state == "BATCH_STATE_SUCCEEDED"
    assert gemini_server.batches[job.name].request_count == 2
    assert operation(gemini_server, job.name)["done"] is True


def test_a_scripted_http_error_is_that_requests_error_and_a_refusal_takes_no_reply(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.answer_json({"said": "first"})
    gemini_server.fail(429)
    refused: types.InlinedRequestDict = {"contents": "Why?", "config": {"response_logprobs": True}}
    job = gemini().batches.create(
        model=settings().gemini_model, src=[refused, inline("One."), inline("Two.")]
    )
    assert job.name is not None

    answers = gemini().batches.get(name=job.name).dest or types.BatchJobDestination()
    assert answers.inlined_responses is not None
    logprobs, first, quota = answers.inlined_responses
    assert logprobs.error is not None
    assert logprobs.error.code == 3  # google.rpc.Code INVALID_ARGUMENT
    assert logprobs.error.message == f"Logprobs is not enabled for models/{settings().gemini_model}"
    assert first.response is not None
    assert first.response.text == '{"said": "first"}'
    assert quota.response is None
    assert quota.error is not None
    assert quota.error.code == 8  # google.rpc.Code RESOURCE_EXHAUSTED
    assert [r.status for r in gemini_server.requests] == [400, 200, 429]
    stats = operation(gemini_server, job.name)["metadata"]["batchStats"]
    assert stats == {
        "requestCount": "3",
        "successfulRequestCount": "1",
        "failedRequestCount": "2",
        "pendingRequestCount": "0",
    }


def test_a_held_batch_runs_until_cancelled_and_stays_cancelled(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.hold_batches()
    gemini_server.answer_json({"said": "late"})
    job = create_batch("Hold on.")
    assert job.name is not None
    running = gemini().batches.get(name=job.name)
    assert running.state == types.JobState.JOB_STATE_RUNNING
    assert running.dest is None

    gemini().batches.cancel(name=job.name)
    gemini_server.release_batches()

    cancelled = gemini().batches.get(name=job.name)
    assert cancelled.state == types.JobState.JOB_STATE_CANCELLED
    assert cancelled.dest is None
    assert gemini_server.batches[job.name].cancelled
    assert gemini_server.reported_usage()["inputTokens"] == 0


def test_cancelling_a_finished_batch_leaves_it_as_it_is(gemini_server: GeminiTestServer) -> None:
    gemini_server.answer_json({"said": "done"})
    job = create_batch("Finish.")
    assert job.name is not None
    assert gemini().batches.get(name=job.name).state == types.JobState.JOB_STATE_SUCCEEDED
    gemini().batches.cancel(name=job.name)
    after = gemini().batches.get(name=job.name)
    assert after.state == types.JobState.JOB_STATE_SUCCEEDED
    assert after.dest is not None
    assert after.dest.inlined_responses is not None


def test_a_released_batch_succeeds_at_its_next_get(gemini_server: GeminiTestServer) -> None:
    gemini_server.hold_batches()
    gemini_server.answer_json({"said": "now"})
    job = create_batch("Wait.")
    assert job.name is not None
    assert gemini().batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    gemini_server.release_batches()
    assert gemini().batches.get(name=job.name).state == types.JobState.JOB_STATE_SUCCEEDED


def test_a_failing_batch_ends_failed_with_the_operations_error_and_no_output(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.fail_next_batch("The batch could not be processed.")
    gemini_server.answer_json({"said": "kept"})
    job = create_batch("Fail.")
    assert job.name is not None
    assert job.state == types.JobState.JOB_STATE_PENDING

    failed = gemini().batches.get(name=job.name)

    assert failed.state == types.JobState.JOB_STATE_FAILED
    assert failed.dest is None
    sent = operation(gemini_server, job.name)
    assert sent["done"] is True
    assert sent["error"] == {"code": 13, "message": "The batch could not be processed."}
    assert "output" not in sent["metadata"]
    assert "response" not in sent
    assert gemini_server.requests[0].status == 0, "a failed batch answered its request"
    retry = create_batch("Again.")
    assert retry.name is not None
    answers = gemini().batches.get(name=retry.name).dest
    assert answers is not None
    assert answers.inlined_responses is not None
    assert answers.inlined_responses[0].response is not None
    assert answers.inlined_responses[0].response.text == '{"said": "kept"}'


def test_a_batch_pending_past_its_expiry_is_expired(gemini_server: GeminiTestServer) -> None:
    gemini_server.batch_expiry_s = 0.0
    gemini_server.answer_json({"said": "never"})
    job = create_batch("Too late.")
    assert job.name is not None

    expired = gemini().batches.get(name=job.name)

    assert expired.state == types.JobState.JOB_STATE_EXPIRED
    assert expired.dest is None
    assert gemini_server.reported_usage()["inputTokens"] == 0


def test_an_unknown_model_or_an_oversized_batch_is_refused_before_any_request(
    gemini_server: GeminiTestServer,
) -> None:
    with pytest.raises(errors.ClientError) as unknown:
        gemini().batches.create(model="gemini-1.0-pro", src=[inline("Hello.")])
    assert (unknown.value.code, unknown.value.status) == (404, "NOT_FOUND")
    assert "models/gemini-1.0-pro is not found" in (unknown.value.message or "")

    oversized = inline("x" * (20 * 1024 * 1024))
    with pytest.raises(errors.ClientError) as refused:
        gemini().batches.create(model=settings().gemini_model, src=[oversized])
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert gemini_server.requests == []
    assert gemini_server.batches == {}


def test_an_unknown_or_deleted_batch_is_not_found(gemini_server: GeminiTestServer) -> None:
    with pytest.raises(errors.ClientError) as unknown:
        gemini().batches.get(name="batches/never-created")
    assert (unknown.value.code, unknown.value.status) == (404, "NOT_FOUND")

    gemini_server.answer_json({"said": "gone"})
    job = create_batch("Delete me.")
    assert job.name is not None
    gemini().batches.delete(name=job.name)
    with pytest.raises(errors.ClientError) as deleted:
        gemini().batches.get(name=job.name)
    assert deleted.value.code == 404
    assert gemini_server.batches[job.name].deleted


@pytest.mark.pure
def test_reset_forgets_batches_and_their_scripting() -> None:
    server = GeminiTestServer()
    server.hold_batches()
    server.fail_next_batch("no")
    server.batch_expiry_s = 1.0
    server.batches["batches/old"] = Batch("batches/old", "gemini-3.8-flash", 1)

    server.reset()

    assert server.batches == {}
    assert not server.holding_batches
    assert not server.failing_batches
    assert server.batch_expiry_s == 48 * 3600


# -- streaming, function calls, side requests ---------------------------------------------

SHELL = "run_shell_command"
FAILING = "echo failing >&2; exit 2"


def stream(prompt: str = "Say it.", **config: Any) -> list[types.GenerateContentResponse]:
    return list(
        gemini().models.generate_content_stream(
            model=settings().gemini_model,
            contents=prompt,
            config=types.GenerateContentConfig(**config) if config else None,
        )
    )


def test_a_streamed_answer_comes_in_chunks_the_last_with_finish_reason_and_usage(
    gemini_server: GeminiTestServer,
) -> None:
    answer = "The onboarding survey says the first week is slow, " * 4
    gemini_server.answer_text(answer.strip())

    chunks = stream("Summarise the survey.")

    assert len(chunks) > 1
    assert "".join(chunk.text or "" for chunk in chunks) == answer.strip()
    *leading, last = chunks
    assert all(c.candidates and c.candidates[0].finish_reason is None for c in leading)
    assert all(c.usage_metadata is None for c in leading)
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    usage = last.usage_metadata
    assert usage is not None
    sent = gemini_server.requests[0]
    assert sent.streamed
    assert usage.prompt_token_count == sent.usage["promptTokenCount"]
    assert usage.candidates_token_count == (len(answer.strip().encode()) + 3) // 4
    assert usage.thoughts_token_count == sent.usage["thoughtsTokenCount"]
    counts = (usage.prompt_token_count, usage.candidates_token_count, usage.thoughts_token_count)
    assert usage.total_token_count == sum(count or 0 for count in counts)
    assert gemini_server.reported_usage()["inputTokens"] == usage.prompt_token_count


def test_the_stream_is_server_sent_events_with_alt_sse_and_a_json_array_without(
    gemini_server: GeminiTestServer,
) -> None:
    model = settings().gemini_model
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi."}]}]}
    gemini_server.answer_text("Hello there.")
    sse = httpx.post(
        f"{gemini_server.url}/v1beta/models/{model}:streamGenerateContent?alt=sse", json=body
    )
    assert sse.headers["content-type"] == "text/event-stream"
    events = [e for e in sse.text.split("\r\n\r\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert json.loads(events[-1].removeprefix("data: "))["usageMetadata"]["totalTokenCount"] > 0

    gemini_server.answer_text("Hello again.")
    array = httpx.post(
        f"{gemini_server.url}/v1beta/models/{model}:streamGenerateContent", json=body
    )
    assert array.headers["content-type"] == "application/json"
    chunks = array.json()
    assert isinstance(chunks, list)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_a_scripted_function_call_is_answered_streamed_or_not(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.call_function(SHELL, {"command": FAILING}, text="Running it.")
    gemini_server.call_function(SHELL, {"command": FAILING})

    reply = gemini().models.generate_content(model=settings().gemini_model, contents="Run it.")
    chunks = stream("Run it again.")

    assert reply.text == "Running it."
    assert reply.function_calls is not None
    assert [(c.name, c.args) for c in reply.function_calls] == [(SHELL, {"command": FAILING})]
    calls = [call for chunk in chunks for call in chunk.function_calls or []]
    assert [(c.name, c.args) for c in calls] == [(SHELL, {"command": FAILING})]
    assert chunks[-1].candidates is not None
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    parts = json.loads(gemini_server.requests[0].sent)["candidates"][0]["content"]["parts"]
    assert parts[1]["thoughtSignature"] == THOUGHT_SIGNATURE, "Gemini 3 signs a function call"


def test_a_streamed_error_is_the_error_body_before_any_chunk(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.fail(400, message="Request contains an invalid argument.")
    with pytest.raises(errors.ClientError) as refused:
        stream()
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    with pytest.raises(errors.ClientError) as unknown:
        list(gemini().models.generate_content_stream(model="gemini-1.0-pro", contents="Hi."))
    assert unknown.value.code == 404


def test_count_tokens_counts_the_request_as_the_usage_does(
    gemini_server: GeminiTestServer,
) -> None:
    counted = gemini().models.count_tokens(model=settings().gemini_model, contents="x" * 400)
    assert counted.total_tokens == 100
    gemini_server.answer_text("ok")
    gemini().models.generate_content(model=settings().gemini_model, contents="x" * 400)
    assert gemini_server.requests[0].usage["promptTokenCount"] == 100
    assert len(gemini_server.requests) == 1, "countTokens is not a generation"


@pytest.mark.parametrize(("budget", "thoughts"), [(None, None), (-1, 2_048), (1_024, 1_024)])
def test_2_5_flash_lite_thinks_only_when_a_request_gives_it_a_budget(
    gemini_server: GeminiTestServer, budget: int | None, thoughts: int | None
) -> None:
    """Google's thinking budgets table: 2.5 Flash-Lite does not think by default
    (https://ai.google.dev/gemini-api/docs/thinking)."""
    gemini_server.answer_text("ok")
    config = types.GenerateContentConfig(
        thinking_config=None if budget is None else types.ThinkingConfig(thinking_budget=budget)
    )
    reply = gemini().models.generate_content(
        model="gemini-2.5-flash-lite", contents="Hi.", config=config
    )
    assert reply.usage_metadata is not None
    assert reply.usage_metadata.thoughts_token_count == thoughts


def ask_json(schema: dict[str, Any], prompt: str = "Who speaks next?") -> Any:
    config = types.GenerateContentConfig(
        response_mime_type="application/json", response_json_schema=schema
    )
    reply = gemini().models.generate_content(
        model=settings().gemini_model, contents=prompt, config=config
    )
    return json.loads(reply.text or "")


NEXT_SPEAKER = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "next_speaker": {"type": "string"}},
    "required": ["reasoning", "next_speaker"],
}
ROUTER = {
    "type": "OBJECT",
    "properties": {
        "complexity_reasoning": {"type": "STRING"},
        "complexity_score": {"type": "INTEGER"},
    },
    "required": ["complexity_reasoning", "complexity_score"],
}


def test_side_requests_take_their_purposes_default_and_leave_the_main_queue_alone(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.answer_text("The main answer.")

    assert ask_json(NEXT_SPEAKER)["next_speaker"] == "user"
    assert ask_json(ROUTER)["complexity_score"] == 10
    main = gemini().models.generate_content(model=settings().gemini_model, contents="Go.")

    assert main.text == "The main answer."
    assert [r.purpose for r in gemini_server.requests] == [
        "agent_next_speaker",
        "agent_router",
        None,
    ]
    assert [r.prompt for r in gemini_server.main_requests()] == ["Go."]


def test_a_side_request_takes_its_own_scripted_answer_first(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.answer_side(
        "agent_next_speaker", {"reasoning": "Go on.", "next_speaker": "model"}
    )
    gemini_server.answer_json({"main": True})

    assert ask_json(NEXT_SPEAKER)["next_speaker"] == "model"
    assert ask_json(NEXT_SPEAKER)["next_speaker"] == "user", "back to the default"
    assert ask_json({"type": "object"}, prompt="Main.") == {"main": True}


@pytest.mark.pure
def test_every_purpose_has_a_queue_and_a_default_that_is_json_or_text() -> None:
    server = GeminiTestServer()
    assert set(server.side_replies) == {purpose.name for purpose in PURPOSES}
    request = Recorded("gemini-3.5-flash-lite", {"contents": [{"parts": [{"text": "x"}]}]}, {})
    for purpose in PURPOSES:
        assert purpose.default(request).text
    server.answer_side("agent_loop_check", {"unproductive_state_confidence": 1})
    server.reset()
    assert not any(server.side_replies.values())


@pytest.mark.pure
def test_a_stream_cuts_text_after_spaces_and_sends_each_function_call_whole() -> None:
    text = "word " * 40
    call = {"functionCall": {"name": SHELL, "args": {"command": FAILING}}}
    response = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}, call]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 9},
        "modelVersion": "m-001",
        "responseId": "r",
    }

    chunks = stream_chunks(response)

    texts = [c["candidates"][0]["content"]["parts"][0].get("text") for c in chunks[:-1]]
    assert "".join(texts) == text
    assert all(t and t.endswith(" ") for t in texts)
    assert chunks[-1]["candidates"][0]["content"]["parts"] == [call]
    assert [("finishReason" in c["candidates"][0], "usageMetadata" in c) for c in chunks] == [
        (False, False)
    ] * (len(chunks) - 1) + [(True, True)]
    assert all(c["modelVersion"] == "m-001" and c["responseId"] == "r" for c in chunks)


# -- the real Gemini CLI against the stand-in ---------------------------------------------


def test_gemini_cli_runs_a_failing_shell_command_three_times_then_answers(
    gemini_server: GeminiTestServer, tmp_path: Path
) -> None:
    """Gemini CLI 0.61 (npm, headless) streams its turns; its side requests (the router)
    take their defaults, so that the script holds only the agent's own turns."""
    for attempt in range(3):
        gemini_server.call_function(SHELL, {"command": FAILING, "description": f"Try {attempt}"})
    gemini_server.answer_text("It failed three times with exit code 2.")
    session = str(uuid.uuid4())

    done = run_gemini(
        "Run the failing command.",
        base_url=gemini_server.url,
        home=tmp_path,
        model=None,
        session_id=session,
    )

    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["session_id"] == session
    assert output["response"] == "It failed three times with exit code 2."
    assert output["stats"]["tools"]["byName"][SHELL]["count"] == 3
    main = gemini_server.main_requests()
    assert len(main) == 4
    assert all(r.streamed and SHELL in r.tools for r in main)
    assert {r.model for r in main} == {"gemini-3.8-flash"}, "the router's default: Flash"
    assert gemini_server.requests[0].purpose == "agent_router"
    answers = [
        part["functionResponse"]["response"]["output"]
        for r in main[1:]
        for part in r.body["contents"][-1]["parts"]
        if "functionResponse" in part
    ]
    assert len(answers) == 3
    assert all("Exit Code: 2" in answer for answer in answers)
    assert {r.purpose for r in gemini_server.requests} - {None} <= {p.name for p in PURPOSES}
