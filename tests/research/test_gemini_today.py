"""Research runs against Gemini as it behaves today: current models, thinking, quotas
read from the error body, configuration errors, blocked prompts and the implicit cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import local_model
from shared.models import DEFAULT_MODEL, PROFILES
from tests.api import Configure
from tests.gemini import SERVED_ON_THE_DEVELOPER_API, use_vertex
from tests.research.conftest import Research


def failed_with(research: Research, code: str) -> dict[str, object]:
    run_id = research.ask().json()["run"]["id"]
    body = research.settled(run_id)
    assert (body["run"]["status"], body["run"]["failure_code"]) == ("failed", code), body
    return research.stored_run(run_id)


@pytest.mark.pure
def test_the_default_model_is_a_current_generally_available_one() -> None:
    profile = PROFILES[DEFAULT_MODEL]
    assert profile.stage == "ga"
    assert not profile.retired


@pytest.mark.parametrize("model", SERVED_ON_THE_DEVELOPER_API)
def test_a_run_completes_with_the_default_settings_on_every_served_model(
    research: Research, configure: Configure, model: str
) -> None:
    configure(GEMINI_MODEL=model)
    research.world.gemini.respond_with(local_model.answer)
    run_id = research.ask().json()["run"]["id"]
    body = research.settled(run_id)
    assert body["run"]["status"] == "completed", research.stored_run(run_id)
    (sent,) = research.world.gemini.requests
    config = sent.body["generationConfig"]
    assert "responseLogprobs" not in config
    assert ("temperature" in config) is PROFILES[model].send_temperature
    assert config["maxOutputTokens"] == 8192 + 4096
    usage = research.stored_run(run_id)["usage"]
    assert usage == {
        "input_tokens": research.world.gemini.reported_usage()["inputTokens"],
        "output_tokens": research.world.gemini.reported_usage()["outputTokens"],
        "cached_tokens": 0,
        "thought_tokens": research.world.gemini.reported_usage()["thoughtTokens"],
    }


def test_a_retired_model_fails_at_once_with_gemini_s_own_words(
    research: Research, configure: Configure
) -> None:
    configure(GEMINI_MODEL="gemini-2.5-flash")
    stored = failed_with(research, "provider_unavailable")
    assert len(research.world.gemini.requests) == 1
    reason = stored["rejected"][0]["reason"]  # type: ignore[index]
    assert reason.startswith("Gemini answered HTTP 404 NOT_FOUND: models/gemini-2.5-flash is not")


@pytest.mark.parametrize("status", [400, 403, 404])
def test_a_configuration_error_is_never_retried_and_keeps_its_message(
    research: Research, status: int
) -> None:
    research.world.gemini.fail(
        status, times=3, message="API key not valid. Please pass a valid key."
    )
    stored = failed_with(research, "provider_unavailable")
    assert len(research.world.gemini.requests) == 1
    reason = stored["rejected"][0]["reason"]  # type: ignore[index]
    assert reason == (
        f"Gemini answered HTTP {status} "
        f"{json.loads(research.world.gemini.requests[0].sent)['error']['status']}: "
        "API key not valid. Please pass a valid key."
    )


def test_a_run_completes_through_a_429_after_the_delay_its_body_names(
    research: Research,
) -> None:
    research.world.gemini.quota("minute", delay_s=0.5)
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed"
    first, second = research.world.gemini.requests
    assert second.at - first.at >= 0.5


def test_a_per_day_quota_fails_at_once_with_its_own_detail(research: Research) -> None:
    research.world.gemini.quota("day", delay_s=30)
    stored = failed_with(research, "provider_unavailable")
    assert len(research.world.gemini.requests) == 1
    reason = stored["rejected"][0]["reason"]  # type: ignore[index]
    assert reason.startswith(
        "Gemini's per-day quota GenerateRequestsPerDayPerProjectPerModel is used up; "
        "Gemini answered HTTP 429 RESOURCE_EXHAUSTED"
    )


def test_a_blocked_prompt_names_its_reason(research: Research) -> None:
    research.world.gemini.block("PROHIBITED_CONTENT")
    stored = failed_with(research, "generation_unconfirmed")
    reason = stored["rejected"][0]["reason"]  # type: ignore[index]
    assert reason == "Gemini blocked the prompt: PROHIBITED_CONTENT"


def test_two_questions_over_one_conversation_share_the_evidence_prefix(
    research: Research,
) -> None:
    long_texts = [
        f"Interview {n}: " + "the onboarding wizard asks too much. " * 60 for n in range(8)
    ]
    research.upsert([{"text": text} for text in long_texts])
    research.world.gemini.respond_with(local_model.answer)
    runs = []
    for question in ("Why is onboarding slow?", "What do people like?"):
        run_id = research.ask(request_kind="question", question=question).json()["run"]["id"]
        assert research.settled(run_id)["run"]["status"] == "completed"
        runs.append(run_id)
    first, second = (research.stored_run(run_id)["usage"] for run_id in runs)
    assert first["cached_tokens"] == 0
    evidence_tokens = sum(len(text) for text in long_texts) // 4
    assert second["cached_tokens"] >= evidence_tokens
    assert second["cached_tokens"] >= PROFILES[DEFAULT_MODEL].cache_min_tokens


def test_a_model_not_in_the_table_is_asked_for_nothing_it_might_refuse(
    research: Research, configure: Configure
) -> None:
    configure(GEMINI_MODEL="gemini-9-experimental")
    failed_with(research, "provider_unavailable")
    (sent,) = research.world.gemini.requests
    config = sent.body["generationConfig"]
    assert not {"thinkingConfig", "temperature", "responseLogprobs"} & set(config)
    assert config["maxOutputTokens"] == 8192 + 4096


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite"])
def test_vertex_ai_s_2_5_models_still_answer_with_a_thinking_budget(
    research: Research, configure: Configure, tmp_path: Path, model: str
) -> None:
    use_vertex(configure, research.world.gemini, tmp_path, model)
    research.world.gemini.respond_with(local_model.answer)
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed", research.stored_run(run_id)
    (sent,) = research.world.gemini.requests
    assert sent.backend == "vertex"
    assert sent.body["generationConfig"]["thinkingConfig"] == {"thinking_budget": 4096}
    assert sent.body["generationConfig"]["temperature"] == 0.0


def test_credentials_that_cannot_be_used_fail_the_run_saying_so(
    research: Research, configure: Configure, tmp_path: Path
) -> None:
    use_vertex(configure, research.world.gemini, tmp_path, "gemini-2.5-flash")
    credentials = tmp_path / "credentials.json"
    broken = json.loads(credentials.read_text()) | {"token_url": "http://127.0.0.1:9/token"}
    credentials.write_text(json.dumps(broken))
    stored = failed_with(research, "provider_unavailable")
    reason = stored["rejected"][0]["reason"]  # type: ignore[index]
    assert reason.startswith("Gemini's credentials could not be used: ")
    assert research.world.gemini.requests == []
