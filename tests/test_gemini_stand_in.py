"""The Gemini stand-in's own scripting, as the tests rely on it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from google.genai import errors, types

from cli.gemini_stand_in import Batch, GeminiTestServer
from shared.clients import gemini
from shared.instance import settings
from tests.api import wait_for


def ask_once() -> str | None:
    config = types.GenerateContentConfig(response_mime_type="application/json")
    reply = gemini().models.generate_content(
        model=settings().gemini_model, contents="Say it.", config=config
    )
    return reply.text


def test_a_held_answer_is_sent_only_once_its_gate_opens(gemini_server: GeminiTestServer) -> None:
    gate = gemini_server.held_answer_json({"said": "now"})
    with ThreadPoolExecutor(max_workers=1) as pool:
        asked = pool.submit(ask_once)
        wait_for(lambda: len(gemini_server.requests) == 1)
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
