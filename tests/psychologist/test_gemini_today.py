"""Analyses against Gemini as it behaves today: every served model, thinking that spends
the output allowance, failures that say what happened, and large logs within their lease."""

from __future__ import annotations

import json

import pytest

from cli import local_model
from cli.gemini_stand_in import Reply
from tests.api import Configure
from tests.gemini import SERVED_ON_THE_DEVELOPER_API
from tests.psychologist.conftest import Log, Psychologist
from tests.psychologist.test_analysis_flow import reopening_log

SESSION = "01JC4Z8QK3M7YV2N5T9B0PXHRA"


@pytest.mark.parametrize("model", SERVED_ON_THE_DEVELOPER_API)
def test_an_analysis_completes_with_the_default_settings_on_every_served_model(
    psy: Psychologist, configure: Configure, model: str
) -> None:
    configure(GEMINI_MODEL=model)
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.respond_with(local_model.answer)
    body = psy.settled(psy.analyse(SESSION))
    assert body["status"] == "completed", body
    assert body["counts"]["hypotheses"] >= 1
    (call,) = body["calls"]
    assert call["modelVersion"] == local_model.MODEL_VERSION
    assert body["usage"] == psy.world.gemini.reported_usage()


def test_thinking_that_spends_the_whole_allowance_is_told_apart_from_a_long_answer(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_THINKING_TOKENS="0", PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT="100")
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": []})
    thinking = psy.settled(psy.analyse(SESSION))
    assert thinking["failureCode"] == "generation_unconfirmed"
    assert thinking["failureDetail"] == (
        "Gemini stopped at MAX_TOKENS while thinking: thinking used 100 of the 100 output "
        "tokens and none was left for the answer (raise the thinking allowance)"
    )
    assert thinking["usage"]["thoughtTokens"] == 100

    psy.world.gemini.answer_text(json.dumps({"hypotheses": []}) + " " * 1000, thoughts=10)
    long_answer = psy.settled(psy.analyse(SESSION))
    assert long_answer["failureDetail"] == (
        "Gemini stopped at MAX_TOKENS: the answer used 90 tokens and thinking 10 of the 100 "
        "output tokens (the answer is too long)"
    )


def test_a_quota_refusal_s_status_and_message_reach_the_analysis(psy: Psychologist) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.quota("day", delay_s=3600)
    body = psy.settled(psy.analyse(SESSION))
    assert body["failureCode"] == "provider_unavailable"
    assert body["failureDetail"].startswith(
        "Gemini's per-day quota GenerateRequestsPerDayPerProjectPerModel is used up; Gemini "
        "answered HTTP 429 RESOURCE_EXHAUSTED: You exceeded your current quota"
    )
    assert len(psy.world.gemini.requests) == 1


def forty_chunk_log(psy: Psychologist, configure: Configure, lease_s: str, call_s: str) -> None:
    """720 events under a 1,200-token input budget (about 40 chunks), analysed eight calls
    at a time within `lease_s`, planning `call_s` for each call."""
    configure(
        PSYCHOLOGIST_INPUT_TOKEN_BUDGET="1200",
        PSYCHOLOGIST_LEASE_SECONDS=lease_s,
        PSYCHOLOGIST_CALL_CONCURRENCY="8",
        PSYCHOLOGIST_CALL_SECONDS=call_s,
    )
    log = Log()
    events = 720
    for index in range(events):
        log.add("dev-api", "tool.call", task=f"T-{index % 7}", tool="pytest", note="x" * 40)
    for start in range(0, events, 500):
        assert psy.ingest(SESSION, log.events[start : start + 500]).status_code == 200


NOTHING_FOUND = Reply(text=json.dumps({"hypotheses": []}))


def test_a_forty_chunk_log_settles_within_its_lease_at_scaled_latency(
    psy: Psychologist, configure: Configure
) -> None:
    """41 calls of 0.2 s each take 8.2 s one after the other, past the 5 s a 10 s lease
    leaves for Gemini; eight at a time they take about 1.2 s."""
    forty_chunk_log(psy, configure, lease_s="10", call_s="0.5")
    psy.world.gemini.latency_s = 0.2
    psy.world.gemini.respond_with(lambda _request: NOTHING_FOUND)
    body = psy.settled(psy.analyse(SESSION))
    assert body["status"] == "completed", body
    assert body["counts"]["chunks"] >= 40
    assert body["counts"]["calls"] == body["counts"]["chunks"]


def test_a_log_whose_calls_cannot_finish_inside_the_lease_fails_before_asking(
    psy: Psychologist, configure: Configure
) -> None:
    forty_chunk_log(psy, configure, lease_s="60", call_s="30")
    body = psy.settled(psy.analyse(SESSION))
    chunks = body["counts"]["chunks"]
    rounds = -(-chunks // 8) + 1
    assert body["failureCode"] == "input_too_large"
    assert body["failureDetail"].startswith(
        f"the log needs {chunks + 1} Gemini calls in {rounds} rounds of at most 8 at once, "
        f"{rounds * 30} s at 30 s a call, and only "
    )
    assert psy.world.gemini.requests == []
