"""Session-start model selection: walked with Gemini, frozen, and read under audience rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.counting import CallCounter
from cli.gemini_stand_in import THOUGHTS_BY_LEVEL
from shared.clients import db
from shared.models import ANSWER_MODEL
from shared.validation import issues_for
from tests.agentconnect.conftest import (
    AGENT,
    CAPABILITY,
    DEFAULT,
    FIRST,
    SECOND,
    Connect,
    answer,
    selection_with,
)
from tests.api import Configure, redeliver


def assert_contract(body: dict[str, Any]) -> None:
    assert issues_for("agentconnect/evaluation", body) == []


def test_a_two_step_selection_falls_through_to_the_second_step_end_to_end(
    configured: Connect,
) -> None:
    """The first question answers no, so its rule does not hold; the second step's answer
    `large` reaches its threshold and selects that step's target. The frozen evaluation
    carries the decision, the models asked and answered, the summed usage and the chain of
    both steps, each with its raw texts."""
    configured.world.gemini.answer_json(answer(False, 0.9), usage=(50, 5))
    configured.world.gemini.answer_json(
        answer("large", 0.7), usage=(60, 6), model_version="gemini-test-002"
    )
    started = configured.start()
    assert started["seq"] == 1
    body = configured.frozen(1)
    assert_contract(body)
    assert (body["outcome"], body["decisionId"], body["sessionId"]) == (
        "selected",
        SECOND,
        started["sessionId"],
    )
    assert body["target"] == {
        **DEFAULT,
        "runtime": "container",
        "effort": "medium",
        "permissionMode": "plan",
    }
    assert body["answer"] == {"type": "choice", "value": "large", "probability": 0.7}
    assert body["reason"].startswith("rule 1 of step size")
    assert (body["requestedModel"], body["actualModel"]) == (ANSWER_MODEL, "gemini-test-002")
    thinking = 2 * THOUGHTS_BY_LEVEL["MINIMAL"]
    assert body["usage"] == {"inputTokens": 110, "outputTokens": 11 + thinking}
    assert body["latencyMs"] > 0
    assert body["detailsExpired"] is False
    assert [c["stepId"] for c in body["chain"]] == ["initial", "size"]
    assert [c["evaluation"]["status"] for c in body["chain"]] == ["answered", "answered"]
    assert body["chain"][0]["evaluation"]["answer"] == {
        "type": "boolean",
        "value": False,
        "probability": 0.9,
    }
    assert [s["condition"] for s in body["steps"]] == [
        None,
        {"type": "choice", "thresholds": {"large": 0.6}},
    ]
    assert all(s["providerId"] == "google-gemini" for s in body["steps"])
    assert body["selection"]["decisionId"] == FIRST
    assert body["selection"]["steps"][0]["id"] == "size"
    assert body["input"] == {"repo": "web", "files": 12}
    assert body["question"]["criteria"] == {"small": "one file", "large": "many files"}
    assert body["fullAnswer"]["probabilitySource"] == "model_estimate"
    assert "large" in body["rawResponse"]["text"]
    prompt = configured.world.gemini.requests[1].prompt
    assert "<session_input>" in prompt
    assert "- large: many files" in prompt


def test_a_rule_of_the_first_step_selects_without_asking_further(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.start()
    body = configured.frozen(1)
    assert (body["outcome"], body["decisionId"]) == ("selected", FIRST)
    assert body["target"]["model"] == "gemini-2.5-pro"
    assert len(body["chain"]) == 1
    assert len(configured.world.gemini.requests) == 1


def test_a_probability_exactly_at_the_threshold_holds(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(True, 0.8))
    configured.start()
    assert configured.frozen(1)["outcome"] == "selected"


def test_no_rule_holding_at_any_step_gives_the_default(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(True, 0.79))
    configured.world.gemini.answer_json(answer("small", 0.99))
    configured.start()
    body = configured.frozen(1)
    assert_contract(body)
    assert (body["outcome"], body["target"], body["decisionId"]) == ("defaulted", DEFAULT, SECOND)
    assert body["reason"] == "no rule held at any of the 2 steps; the default target applies"


def test_a_provider_failure_falls_back_to_the_default_and_says_so(configured: Connect) -> None:
    configured.world.gemini.fail(503, times=3)
    configured.start()
    body = configured.frozen(1)
    assert_contract(body)
    assert (body["outcome"], body["target"], body["answer"]) == ("fallback", DEFAULT, None)
    assert "step initial failed" in body["reason"]
    assert body["chain"][0]["evaluation"]["status"] == "failed"
    last_try = configured.world.gemini.requests[-1]
    assert json.loads(body["rawResponse"]["text"]) == json.loads(last_try.sent)
    assert json.loads(body["rawResponse"]["text"])["error"]["code"] == 503


def test_an_answer_outside_the_options_falls_back_to_the_default(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(False, 0.9))
    configured.world.gemini.answer_json(answer("medium", 0.9))
    configured.start()
    body = configured.frozen(1)
    assert body["outcome"] == "fallback"
    assert "answered outside the question's options" in body["reason"]
    assert body["chain"][1]["evaluation"]["status"] == "invalid"


def test_a_later_configuration_never_changes_an_earlier_evaluation(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.start()
    before = configured.frozen(1)
    changed = selection_with(default={**DEFAULT, "model": "another-model"})
    assert configured.configure(changed).json()["version"] == 2
    configured.world.gemini.answer_json(answer(True, 0.1))
    configured.world.gemini.answer_json(answer("small", 0.9))
    configured.start(title="Second")
    assert configured.frozen(2)["target"]["model"] == "another-model"
    assert configured.get(1).json() == before


def test_details_expire_while_the_summary_stays(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.start()
    configured.frozen(1)
    summary = db().document(f"orgs/{configured.org}/agents/{AGENT}/evaluations/1")
    summary.update({"details_expires_at": summary.get().get("at")})
    body = configured.get(1).json()
    assert_contract(body)
    assert body["detailsExpired"] is True
    assert not {
        "selection",
        "question",
        "input",
        "fullAnswer",
        "chain",
        "steps",
        "rawRequest",
        "rawResponse",
    } & set(body)
    assert body["outcome"] == "selected"


def test_a_raw_response_over_the_limit_is_cut_and_marked(
    configured: Connect, configure: Configure
) -> None:
    configure(AGENTCONNECT_RAW_TEXT_LIMIT="100")
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.start()
    body = configured.frozen(1)
    assert body["rawResponse"]["truncated"] is True
    assert len(body["rawResponse"]["text"]) == 100
    assert body["steps"][0]["rawRequest"]["truncated"] is True


def test_sessions_get_consecutive_seqs_and_a_duplicate_delivery_evaluates_once(
    configured: Connect,
) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.world.gemini.answer_json(answer(True, 0.95))
    first, second = configured.start(sessionId="s-1"), configured.start(sessionId="s-2")
    assert (first["seq"], second["seq"]) == (1, 2)
    configured.frozen(2)
    frozen = configured.frozen(1)
    document = f"orgs/{configured.org}/agents/{AGENT}/agent_sessions/s-1"
    assert redeliver(configured.api, "agentconnect_evaluation_worker", document) == 200
    assert len(configured.world.gemini.requests) == 2
    assert configured.get(1).json() == frozen
    again = configured.api.post(
        configured.path("/sessions"),
        {"sessionId": "s-1", "title": "t", "input": {}},
        configured.member,
    )
    assert again.status_code == 202, "the same session started again: its first start's answer"
    assert (again.json()["seq"], again.json()["registeredBefore"]) == (1, True)
    assert len(configured.world.gemini.requests) == 2, "and no evaluation of its own"
    assert configured.get(3).status_code == 404


def test_an_evaluation_not_frozen_yet_says_so_with_retry_after(configured: Connect) -> None:
    gate = configured.world.gemini.held_answer_json(answer(True, 0.95))
    configured.start()
    pending = configured.get(1)
    assert pending.status_code == 409
    assert pending.headers["Retry-After"] == "1"
    assert "not frozen yet" in pending.json()["message"]
    gate.open()
    configured.frozen(1)


def test_a_session_token_reads_its_own_evaluation_and_nothing_else(configured: Connect) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.world.gemini.answer_json(answer(True, 0.95))
    own = configured.start(sessionId="mine")
    configured.start(sessionId="theirs")
    configured.frozen(1)
    configured.frozen(2)
    token = own["sessionToken"]
    assert configured.get(1, token).status_code == 200
    assert configured.get(2, token).status_code == 404
    other_agent = (
        f"/v1/orgs/{configured.org}/agents/3f2b8a4e-1c9d-4e7f-8a6b-2d5c9e0f1a3c/model-evaluations/1"
    )
    assert configured.api.call("GET", other_agent, token=token).status_code == 404
    assert (
        configured.api.call("GET", configured.path("/model-evaluations"), token=token).status_code
        == 403
    )
    assert (
        configured.api.post(
            configured.path("/sessions"), {"title": "t", "input": {}}, token
        ).status_code
        == 403
    )


def test_a_viewer_without_the_capability_and_another_orgs_member_get_403(
    configured: Connect,
) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.start()
    configured.frozen(1)
    no_capability = configured.world.user(
        configured.org, "rui", "viewer", capabilities=("agent:research",)
    )
    assert configured.get(1, no_capability).status_code == 403
    other = configured.world.tenant("org")
    outsider = configured.world.user(other, "eve", "owner", capabilities=CAPABILITY)
    assert configured.get(1, outsider).status_code == 403
    assert configured.get(2).status_code == 404


def test_the_list_is_newest_first_and_paged(configured: Connect) -> None:
    for _ in range(5):
        configured.world.gemini.answer_json(answer(True, 0.95))
        configured.frozen(configured.start()["seq"])
    seen, token = [], None
    while True:
        query = "?limit=2" + (f"&pageToken={token}" if token else "")
        page = configured.api.call(
            "GET", configured.path("/model-evaluations" + query), token=configured.viewer
        ).json()
        assert issues_for("agentconnect/evaluations.response", page) == []
        seen += [e["seq"] for e in page["evaluations"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == [5, 4, 3, 2, 1]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            {
                "decision": {
                    **selection_with()["decision"],
                    "rules": [
                        {"model": "m", "when": {"type": "boolean", "thresholds": {"maybe": 0.5}}}
                    ],
                }
            },
            ["decision", "rules", 0, "when", "thresholds"],
        ),
        (
            {
                "decision": {
                    **selection_with()["decision"],
                    "rules": [
                        {"model": "m", "when": {"type": "choice", "thresholds": {"true": 0.5}}}
                    ],
                }
            },
            ["decision", "rules", 0, "when", "type"],
        ),
        (
            {
                "decision": {
                    **selection_with()["decision"],
                    "rules": [
                        {
                            "permissionMode": "bypassPermissions",
                            "when": {"type": "boolean", "thresholds": {"true": 0.5}},
                        }
                    ],
                }
            },
            ["decision", "rules", 0, "permissionMode"],
        ),
        ({"default": {**DEFAULT, "permissionMode": "root"}}, ["default", "permissionMode"]),
    ],
    ids=["unknown-option", "wrong-condition-type", "raises-permission", "unknown-permission"],
)
def test_a_contradictory_selection_is_refused_and_stores_nothing(
    connect: Connect, change: dict[str, Any], path: list[Any]
) -> None:
    reply = connect.configure(selection_with(**change))
    assert reply.status_code == 400, reply.text
    assert path in [issue["path"] for issue in reply.json()["issues"]]
    assert db().document(f"orgs/{connect.org}/agents/{AGENT}").get().exists is False


def test_only_an_admin_configures_and_a_session_needs_a_selection(connect: Connect) -> None:
    assert (
        connect.api.call(
            "PUT", connect.path("/model-selection"), selection_with(), connect.member
        ).status_code
        == 403
    )
    reply = connect.api.post(connect.path("/sessions"), {"title": "t", "input": {}}, connect.member)
    assert reply.status_code == 409
    put = connect.configure()
    assert issues_for("agentconnect/selection", put.json()) == []


def test_raw_texts_stay_byte_exact_even_holding_a_value_equal_to_the_key(
    configured: Connect, configure: Configure
) -> None:
    """The key travels in a header, never in a body: the stored exchange is not rewritten
    where a value happens to equal it."""
    secret = "AIzaSy-evidencia-test-secret-0123456789"
    configure(GEMINI_API_KEY=secret)
    configured.world.gemini.answer_text(
        json.dumps({"value": True, "probability": 0.9, "echo": secret})
    )
    body = configured.frozen(configured.start()["seq"])
    (exchange,) = configured.world.gemini.requests
    assert exchange.headers["x-goog-api-key"] == secret
    assert body["rawRequest"]["text"] == exchange.raw.decode()
    assert body["rawResponse"]["text"] == exchange.sent.decode()
    assert "[redacted]" not in json.dumps(body)


def test_a_key_in_a_gemini_error_is_taken_out_where_it_travels(
    configured: Connect, configure: Configure
) -> None:
    secret = "AIzaSy-evidencia-test-secret-0123456789"
    configure(GEMINI_API_KEY=secret)
    configured.world.gemini.fail(
        400,
        message=f"API key not valid for https://example.test/v1/models?key={secret}&alt=json "
        f"(x-goog-api-key: {secret})",
    )
    body = configured.frozen(configured.start()["seq"])
    assert body["outcome"] == "fallback"
    assert secret not in body["reason"]
    assert "?key=[redacted]&alt=json" in body["reason"]
    assert "x-goog-api-key: [redacted]" in body["reason"]


def test_raw_texts_are_the_exact_json_sent_to_and_received_from_gemini(
    configured: Connect,
) -> None:
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    body = configured.frozen(configured.start()["seq"])
    (exchange,) = configured.world.gemini.requests
    assert json.loads(body["rawRequest"]["text"]) == json.loads(exchange.raw)
    assert json.loads(body["rawResponse"]["text"]) == json.loads(exchange.sent)
    assert body["rawRequest"]["truncated"] is body["rawResponse"]["truncated"] is False
    sent = json.loads(body["rawRequest"]["text"])
    assert sent["generationConfig"]["maxOutputTokens"] == 256 + 512
    assert sent["generationConfig"]["thinkingConfig"] == {"thinking_level": "MINIMAL"}
    assert body["steps"][0]["rawRequest"] == body["rawRequest"]
    assert "test-key" not in json.dumps(body)


def test_raw_texts_are_cut_at_the_limit_and_say_so(
    configured: Connect, configure: Configure
) -> None:
    configure(AGENTCONNECT_RAW_TEXT_LIMIT="100")
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    body = configured.frozen(configured.start()["seq"])
    (exchange,) = configured.world.gemini.requests
    for shown, wire in ((body["rawRequest"], exchange.raw), (body["rawResponse"], exchange.sent)):
        assert shown["truncated"] is True
        assert shown["text"] == wire.decode()[:100]


def test_a_warm_evaluation_read_takes_its_selection_from_what_the_instance_kept(
    configured: Connect, counter: CallCounter, configure: Configure
) -> None:
    """A selection version never changes, so the instance keeps the ones it read: the
    first read of an evaluation reads its summary, details and version, the next only the
    first two (the caller's token is remembered, as in production)."""
    configure(AUTH_CACHE_SECONDS="60")
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    seq = configured.start()["seq"]
    first = configured.frozen(seq)
    counter.clear()
    assert configured.get(seq).json() == first
    assert counter.reads == 2
    assert first["question"] == first["steps"][-1]["question"]
