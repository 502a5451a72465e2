"""Evaluations against Gemini as it behaves today: current models take no logprobs and
think by default, Vertex AI's 2.5 models return token log-probabilities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import local_model
from shared.models import PROFILES
from tests.agentconnect.conftest import Connect, answer
from tests.api import Configure
from tests.gemini import SERVED_ON_THE_DEVELOPER_API, use_vertex

DEEP = "This task needs deep reasoning"
"""A title the local model answers the first question "yes, 0.9" for: rule 1 holds."""


@pytest.mark.parametrize("model", SERVED_ON_THE_DEVELOPER_API)
def test_an_evaluation_whose_rule_holds_is_selected_on_every_served_model(
    configured: Connect, configure: Configure, model: str
) -> None:
    configure(GEMINI_MODEL=model)
    configured.world.gemini.respond_with(local_model.answer)
    body = configured.frozen(configured.start(title=DEEP)["seq"])
    assert (body["outcome"], body["answer"]["probability"]) == ("selected", 0.9), body["reason"]
    assert body["fullAnswer"]["probabilitySource"] == "model_estimate"
    (sent,) = configured.world.gemini.requests
    config = sent.body["generationConfig"]
    assert "responseLogprobs" not in config
    assert config["thinkingConfig"] == PROFILES[model].least_thinking()
    assert config["maxOutputTokens"] == 256 + 512


def test_without_the_least_thinking_a_current_model_spends_the_answer_s_tokens_thinking(
    configured: Connect, configure: Configure
) -> None:
    """The default thinking level (MEDIUM) of a current Flash spends more than the whole
    allowance: the step ends MAX_TOKENS and the walk falls back, saying why."""
    configure(AGENTCONNECT_THINKING_TOKENS="0", AGENTCONNECT_OUTPUT_TOKEN_LIMIT="100")
    configured.world.gemini.answer_json(answer(True, 0.95), thoughts=2_000)
    body = configured.frozen(configured.start(title=DEEP)["seq"])
    assert body["outcome"] == "fallback"
    assert (
        "Gemini stopped at MAX_TOKENS while thinking: thinking used 100 of the 100"
        in (body["reason"])
    )


def test_vertex_ai_s_2_5_models_give_the_probability_from_token_logprobs(
    configured: Connect, configure: Configure, tmp_path: Path
) -> None:
    use_vertex(configure, configured.world.gemini, tmp_path, "gemini-2.5-flash")
    text = '{"value": true, "probability": 0.5}'
    tokens = [('{"value": ', -0.01), ("true", -0.105360516), (', "probability": 0.5}', -0.2)]
    configured.world.gemini.answer_text(text, logprobs=tokens)
    body = configured.frozen(configured.start()["seq"])
    assert body["answer"]["probability"] == pytest.approx(0.9)
    assert body["fullAnswer"]["probabilitySource"] == "logprobs"
    assert body["outcome"] == "selected"
    (sent,) = configured.world.gemini.requests
    assert sent.backend == "vertex"
    assert sent.body["generationConfig"]["responseLogprobs"] is True
    assert sent.body["generationConfig"]["temperature"] == 0.0
    assert sent.headers["Authorization"] == "Bearer stand-in-token"


def test_a_refusal_of_logprobs_is_retried_once_without_them_and_remembered(
    configured: Connect, configure: Configure, tmp_path: Path
) -> None:
    use_vertex(configure, configured.world.gemini, tmp_path, "gemini-2.5-flash-lite")
    configured.world.gemini.fail(
        400, message="Unable to submit request because Logprobs is not supported for this model."
    )
    configured.world.gemini.answer_json(answer(True, 0.95))
    first = configured.frozen(configured.start()["seq"])
    assert (first["outcome"], first["fullAnswer"]["probabilitySource"]) == (
        "selected",
        "model_estimate",
    )
    refused, retried = configured.world.gemini.requests
    assert json.loads(refused.raw)["generationConfig"]["responseLogprobs"] is True
    assert "responseLogprobs" not in retried.body["generationConfig"]

    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.frozen(configured.start(title="Again")["seq"])
    assert "responseLogprobs" not in configured.world.gemini.requests[-1].body["generationConfig"]
