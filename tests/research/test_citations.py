"""Every cited statement carries the exact passage it rests on: the model quotes, code
finds the quote in the cited item's text at the cited revision, asks once more naming
what failed, and fails the run when the second answer still misquotes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cli.gemini_stand_in import Reply
from tests.api import Configure, assert_conforms
from tests.research.conftest import Research

TEXTS = [
    "Onboarding took me two days.",
    "The setup wizard is confusing.",
    "Support answered fast.",
]


@pytest.fixture(autouse=True)
def support_check(configure: Configure) -> None:
    """The support check on, as it is by default outside the suite."""
    configure(RESEARCH_SUPPORT_CHECK="on")


def citations(research: Research, run_id: str, token: str | None = None) -> Any:
    path = f"/research-api/runs/{run_id}/citations?workspace_id={research.workspace}"
    return research.api.call("GET", path, token=token or research.viewer)


def quoting(research: Research, quote: str, index: int = 0) -> dict[str, Any]:
    """An answer citing item `index` with this quote."""
    cite = [list(research.evidence.items())[index]]
    answer = research.answer(cite=cite)
    answer["answer"]["evidence"][0]["quote"] = quote
    return answer


def test_a_completed_runs_citations_serve_each_quote_at_its_offsets_in_the_cited_text(
    research: Research,
) -> None:
    """The stand-in quotes each citation from the prompt's evidence; every citation read
    back stands at its offsets in its item's text, and the status contract is unchanged."""
    research.world.gemini.answer_json(research.answer(cite=list(research.evidence.items())))
    run_id = research.ask().json()["run"]["id"]
    settled = research.settled(run_id)
    assert settled["run"]["status"] == "completed", research.stored_run(run_id)["rejected"]
    assert_conforms("POST", "/research-api/assistant/status", research.status(run_id))
    reply = citations(research, run_id)
    assert reply.status_code == 200, reply.text
    assert_conforms("GET", "/research-api/runs/{runId}/citations", reply)
    [statement] = reply.json()["statements"]
    assert statement["path"] == "answer"
    texts = dict(zip(research.evidence, TEXTS, strict=True))
    assert len(statement["citations"]) == 3
    for cited in statement["citations"]:
        text = texts[cited["evidence_id"]]
        assert text[cited["start"] : cited["end"]] == cited["quote"] == text
        assert cited["revision"] == research.evidence[cited["evidence_id"]]
    assert all(cited["supported"] is True for cited in statement["citations"])
    assert research.stored_run(run_id)["quote_repairs"] == 0
    asked, checked = research.world.gemini.requests
    assert "quote" in str(asked.body["generationConfig"]["responseJsonSchema"])
    assert "Onboarding took me two days." in checked.prompt
    usage = research.stored_run(run_id)["usage"]
    reported = research.world.gemini.reported_usage()
    assert usage["input_tokens"] == reported["inputTokens"]
    assert usage["output_tokens"] == reported["outputTokens"]


def test_a_misquote_is_named_back_once_and_the_second_answer_completes(
    research: Research,
) -> None:
    research.world.gemini.answer_json(quoting(research, "Onboarding took me a day."))
    research.world.gemini.answer_json(quoting(research, "took me two days"))
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed"
    repair = research.world.gemini.requests[1].prompt
    assert "answer.evidence[0].quote" in repair
    assert "is not in the text of evidence" in repair
    [statement] = citations(research, run_id).json()["statements"]
    assert statement["citations"][0]["quote"] == "took me two days"
    assert research.stored_run(run_id)["quote_repairs"] == 1


ADVERSARIAL = [
    ("whitespace-inside-a-word", "Onboard ing took me", 0, "is not in the text of evidence"),
    ("smart-quotes", "The \u201csetup\u201d wizard", 1, "is not in the text of evidence"),
    ("ellipsis", "Onboarding ... two days.", 0, "joins passages with an ellipsis"),
    ("another-item", "Support answered fast.", 0, "is in evidence"),
    (
        "longer-than-the-item",
        "Support answered fast. And then some more words.",
        2,
        "is longer than the text of evidence",
    ),
]


@pytest.mark.parametrize(
    ("quote", "index", "reason"),
    [case[1:] for case in ADVERSARIAL],
    ids=[case[0] for case in ADVERSARIAL],
)
def test_an_adversarial_quote_given_twice_fails_the_run_naming_its_reason(
    research: Research, quote: str, index: int, reason: str
) -> None:
    for _ in range(2):
        research.world.gemini.answer_json(quoting(research, quote, index))
    run_id = research.ask().json()["run"]["id"]
    settled = research.settled(run_id)
    assert (settled["run"]["status"], settled["run"]["failure_code"]) == (
        "failed",
        "invalid_output",
    )
    stored = research.stored_run(run_id)
    [rejected] = stored["rejected"]
    assert rejected["path"] == "answer.evidence[0].quote"
    assert reason in rejected["reason"]
    assert list(research.evidence)[index] in rejected["reason"]
    assert stored["quote_repairs"] == 1
    assert len(research.world.gemini.requests) == 2, "no support check of a misquoted answer"
    assert citations(research, run_id).json()["statements"] == []


def test_a_quote_of_the_items_previous_revision_fails_naming_the_revision_cited(
    research: Research,
) -> None:
    first = next(iter(research.evidence))
    revised = research.upsert([{"evidence_id": first, "text": "Onboarding was quick for me."}])
    revision = revised.json()["items"][0]["revision"]
    for _ in range(2):
        answer = research.answer(cite=[(first, revision)])
        answer["answer"]["evidence"][0]["quote"] = "Onboarding took me two days."
        research.world.gemini.answer_json(copy.deepcopy(answer))
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["failure_code"] == "invalid_output"
    [rejected] = research.stored_run(run_id)["rejected"]
    assert f"evidence {first} at revision {revision}" in rejected["reason"]


def test_citations_are_withheld_once_a_cited_item_is_revised_as_the_status_read_says(
    research: Research,
) -> None:
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    research.settled(run_id)
    first = next(iter(research.evidence))
    research.upsert([{"evidence_id": first, "text": "Changed."}])
    body = citations(research, run_id).json()
    status = research.status(run_id).json()
    assert (body["status"], body["availability"]["reason"]) == ("unavailable", "context_changed")
    assert body["availability"] == status["availability"]
    assert body["statements"] == []


def test_a_statement_its_quotes_do_not_support_is_asked_again_then_fails_the_run(
    research: Research,
) -> None:
    """The quote is in the item, but the support check finds it does not say what the
    statement claims: the model is asked once more, and when the check still refuses, the
    run fails invalid_output naming the statement and the check."""
    for _ in range(2):
        research.world.gemini.answer_json(quoting(research, "Support answered fast.", 2))
        research.world.gemini.answer_support(
            {"verdicts": [{"statement": "answer", "supported": False}]}
        )
    run_id = research.ask().json()["run"]["id"]
    settled = research.settled(run_id)
    assert settled["run"]["failure_code"] == "invalid_output"
    stored = research.stored_run(run_id)
    assert stored["rejected"] == [
        {
            "path": "answer.supported",
            "reason": "the support check found its quotes do not say it",
        }
    ]
    assert stored["quote_repairs"] == 1
    assert "answer.supported" in research.world.gemini.requests[2].prompt
    assert len(research.world.gemini.requests) == 4


def test_with_the_support_check_off_a_run_completes_on_its_verified_quotes_alone(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_SUPPORT_CHECK="off")
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed"
    [statement] = citations(research, run_id).json()["statements"]
    assert [c["supported"] for c in statement["citations"]] == [None]
    assert len(research.world.gemini.requests) == 1


def test_a_support_check_gemini_cannot_answer_fails_the_run_counting_both_calls_tokens(
    research: Research,
) -> None:
    research.world.gemini.answer_json(research.answer(), usage=(100, 10), thoughts=0)
    for _ in range(3):
        research.world.gemini.support_replies.append(Reply(status=503))
    run_id = research.ask().json()["run"]["id"]
    settled = research.settled(run_id)
    assert (settled["run"]["status"], settled["run"]["failure_code"]) == (
        "failed",
        "provider_unavailable",
    )
    assert research.stored_run(run_id)["usage"]["input_tokens"] == 100
    assert len(research.world.gemini.requests) == 4


def test_each_step_names_the_model_that_made_it_and_the_check_never_renames_the_answer(
    research: Research,
) -> None:
    """The support check, asked last, answers from another model version: the run still
    names the model that wrote its answer, and the citations read names the check's."""
    research.world.gemini.answer_json(research.answer(), model_version="answer-model-001")
    research.world.gemini.answer_support(
        {"verdicts": [{"statement": "answer", "supported": True}]},
        model_version="check-model-002",
    )
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["model_version"] == "answer-model-001"
    reply = citations(research, run_id)
    assert_conforms("GET", "/research-api/runs/{runId}/citations", reply)
    assert reply.json()["support_check"]["model_version"] == "check-model-002"


def test_with_the_support_check_off_the_citations_read_names_no_check(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_SUPPORT_CHECK="off")
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    research.settled(run_id)
    assert citations(research, run_id).json()["support_check"] is None
