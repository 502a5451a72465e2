"""Every failure code of the status contract has a cause, reached here end to end."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.counting import CallCounter
from shared.clients import db
from shared.validation import issues_for
from tests.api import Configure, admin, wait_for
from tests.research.conftest import Research

UNKNOWN = "00000000-0000-4000-8000-000000000000"


def failed_with(research: Research, code: str, **ask: Any) -> dict[str, Any]:
    asked = research.ask(**ask)
    assert asked.status_code == 202, asked.text
    body = research.settled(asked.json()["run"]["id"])
    assert issues_for("research/status.response", body) == []
    assert body["run"]["status"] == "failed", body
    assert body["run"]["failure_code"] == code
    assert body["availability"]["reason"] == code
    assert body["message"] is None
    return body


def processing(research: Research, run_id: str) -> bool:
    return bool(research.stored_run(run_id)["status"] == "processing")


def test_not_configured_without_gemini_credentials(
    research: Research, configure: Configure
) -> None:
    configure(GEMINI_API_KEY=None, GOOGLE_API_KEY=None)
    body = failed_with(research, "not_configured")
    assert body["availability"]["configured"] is False
    assert research.world.gemini.requests == []


def test_budget_exhausted_once_the_workspace_spent_its_tokens(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_WORKSPACE_TOKEN_BUDGET="150")
    research.world.gemini.answer_json(research.answer(), usage=(120, 40), thoughts=0)
    first = research.settled(research.ask().json()["run"]["id"])
    assert first["run"]["status"] == "completed"
    assert research.tokens_used() == 160
    failed_with(research, "budget_exhausted")
    assert len(research.world.gemini.requests) == 1


def test_access_changed_when_the_asker_loses_membership_before_completion(
    research: Research,
) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    from cli.main import main

    assert main(["admin", "member", "remove", "--tenant", research.workspace, "--user", "ana"]) == 0
    gate.open()
    body = research.settled(run_id)
    assert body["run"]["failure_code"] == "access_changed"
    assert body["message"] is None


def test_access_changed_when_the_askers_role_drops_before_completion(research: Research) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    admin("member", "add", "--tenant", research.workspace, "--user", "ana", "--role", "viewer")
    gate.open()
    assert research.settled(run_id)["run"]["failure_code"] == "access_changed"


def test_source_unavailable_when_cited_evidence_is_removed_before_completion(
    research: Research,
) -> None:
    cited = next(iter(research.evidence))
    gate = research.world.gemini.held_answer_json(research.answer(cite=[(cited, 1)]))
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    removed = research.api.post(
        "/research-api/evidence/remove", research.body(evidence_ids=[cited]), research.member
    )
    assert removed.status_code == 200, removed.text
    gate.open()
    assert research.settled(run_id)["run"]["failure_code"] == "source_unavailable"


def test_source_unavailable_when_the_conversation_holds_no_evidence(research: Research) -> None:
    research.api.post(
        "/research-api/evidence/remove",
        research.body(evidence_ids=list(research.evidence)),
        research.member,
    )
    failed_with(research, "source_unavailable")
    assert research.world.gemini.requests == []


def test_context_changed_when_evidence_changes_while_processing(research: Research) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    assert research.upsert([{"text": "A new interview arrived."}]).status_code == 200
    gate.open()
    assert research.settled(run_id)["run"]["failure_code"] == "context_changed"


def test_input_too_large_instead_of_sampling_the_evidence(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_INPUT_TOKEN_BUDGET="100")
    failed_with(research, "input_too_large")
    assert research.world.gemini.requests == []


@pytest.mark.parametrize("status", [429, 500, 503])
def test_provider_unavailable_after_bounded_retries(research: Research, status: int) -> None:
    research.world.gemini.fail(status, times=3)
    failed_with(research, "provider_unavailable")
    assert len(research.world.gemini.requests) == 3


def test_provider_unavailable_when_gemini_answers_past_the_timeout(
    research: Research, configure: Configure
) -> None:
    configure(GEMINI_TIMEOUT_MS="300", GEMINI_ATTEMPTS="2")
    research.world.gemini.stall(1.0, times=2)
    failed_with(research, "provider_unavailable")
    assert len(research.world.gemini.requests) == 2


def test_a_transient_provider_fault_is_retried_and_the_run_completes(research: Research) -> None:
    research.world.gemini.fail(503, times=1)
    research.world.gemini.answer_json(research.answer())
    body = research.settled(research.ask().json()["run"]["id"])
    assert body["run"]["status"] == "completed"
    assert len(research.world.gemini.requests) == 2


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "RECITATION"])
def test_generation_unconfirmed_when_gemini_does_not_finish_with_stop(
    research: Research, reason: str
) -> None:
    research.world.gemini.finish(reason)
    failed_with(research, "generation_unconfirmed")


def test_generation_unconfirmed_when_gemini_returns_no_candidate(research: Research) -> None:
    research.world.gemini.no_candidates()
    failed_with(research, "generation_unconfirmed")


def test_invalid_output_when_the_answer_is_not_json(research: Research) -> None:
    research.world.gemini.answer_text('{"answer": ')
    failed_with(research, "invalid_output")


def test_invalid_output_when_the_answer_breaks_the_schema(research: Research) -> None:
    research.world.gemini.answer_json(
        research.answer(method_version="research-cited/v2", limitations=[])
    )
    body = failed_with(research, "invalid_output")
    rejected = research.stored_run(body["run"]["id"])["rejected"]
    assert {r["path"] for r in rejected} == {"method_version", "limitations"}


def test_invalid_output_when_a_citation_names_evidence_the_conversation_lacks(
    research: Research,
) -> None:
    research.world.gemini.answer_json(research.answer(cite=[(UNKNOWN, 1)]))
    body = failed_with(research, "invalid_output")
    rejected = research.stored_run(body["run"]["id"])["rejected"]
    assert rejected == [
        {
            "path": "answer.evidence[0]",
            "reason": f"cites evidence {UNKNOWN}, which the conversation does not hold",
        }
    ]


def test_invalid_output_when_a_citation_names_a_revision_never_held(research: Research) -> None:
    cited = next(iter(research.evidence))
    research.world.gemini.answer_json(research.answer(cite=[(cited, 7)]))
    failed_with(research, "invalid_output")


@pytest.mark.parametrize(
    "statement",
    [
        "40% of users find onboarding slow.",
        "Two of the three interviewees disliked setup.",
        "Five respondents mention the wizard.",
    ],
)
def test_invalid_output_when_the_answer_counts_the_evidence(
    research: Research, statement: str
) -> None:
    research.world.gemini.answer_json(research.answer(statement=statement))
    body = failed_with(research, "invalid_output")
    assert "quantitative_claims" in research.stored_run(body["run"]["id"])["rejected"][0]["reason"]


def test_invalid_output_when_a_sentiment_run_labels_nothing(research: Research) -> None:
    research.world.gemini.answer_json(research.answer())
    failed_with(research, "invalid_output", request_kind="sentiment")


def test_conversation_full_once_the_run_limit_is_reached(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_MAX_RUNS_PER_CONVERSATION="1")
    research.world.gemini.answer_json(research.answer())
    assert research.settled(research.ask().json()["run"]["id"])["run"]["status"] == "completed"
    asked = research.ask()
    assert asked.status_code == 202
    assert asked.json()["run"]["failure_code"] == "conversation_full"
    failed = research.settled(asked.json()["run"]["id"])
    assert failed["run"]["generation"] == 2
    assert len(research.world.gemini.requests) == 1


def test_cancelled_while_processing_discards_the_answer(research: Research) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    cancelled = research.api.post(
        "/research-api/assistant/cancel", research.body(run_id=run_id), research.member
    )
    assert cancelled.status_code == 200, cancelled.text
    assert issues_for("research/cancel.response", cancelled.json()) == []
    assert research.slot_holders() == []
    gate.open()
    body = research.settled(run_id)
    assert issues_for("research/status.response", body) == []
    assert (body["run"]["status"], body["run"]["failure_code"], body["message"]) == (
        "cancelled",
        "cancelled",
        None,
    )
    wait_for(lambda: research.tokens_used() == research.world.gemini.reported_tokens())
    assert research.stored_run(run_id)["message"] is None


def test_cancelling_a_completed_run_is_a_conflict(research: Research) -> None:
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    research.settled(run_id)
    reply = research.api.post(
        "/research-api/assistant/cancel", research.body(run_id=run_id), research.member
    )
    assert reply.status_code == 409
    assert reply.json()["code"] == "conflict"


def test_expired_once_past_expires_at_even_before_firestore_deletes_it(research: Research) -> None:
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed"
    ref = db().document(f"workspaces/{research.workspace}/runs/{run_id}")
    ref.update({"expires_at": ref.get().get("created_at")})
    body = research.status(run_id).json()
    assert issues_for("research/status.response", body) == []
    assert (body["run"]["status"], body["run"]["failure_code"], body["message"]) == (
        "expired",
        "expired",
        None,
    )


def test_a_deleted_run_is_404(research: Research) -> None:
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    research.settled(run_id)
    db().document(f"workspaces/{research.workspace}/runs/{run_id}").delete()
    assert research.status(run_id).status_code == 404


def test_a_run_whose_worker_died_reads_as_failed_once_its_lease_passes(research: Research) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    ref = db().document(f"workspaces/{research.workspace}/runs/{run_id}")
    ref.update({"lease_until": ref.get().get("created_at")})
    body = research.status(run_id).json()
    assert issues_for("research/status.response", body) == []
    assert (body["run"]["status"], body["run"]["failure_code"]) == (
        "failed",
        "generation_unconfirmed",
    )
    assert ref.get().get("status") == "processing", "a status read never writes"
    gate.open()
    wait_for(lambda: ref.get().get("status") == "failed")


@pytest.mark.parametrize("change", ["revoked", "expired"])
def test_access_changed_when_the_askers_token_ends_before_completion(
    research: Research, change: str
) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    assert gate.wait_reached()  # the run's evidence and access are read by now
    assert processing(research, run_id)
    token_id = research.member.split("_")[1]
    token = db().document(f"tokens/{token_id}")
    if change == "revoked":
        from cli.main import main

        assert main(["admin", "token", "revoke", token_id]) == 0
    else:
        token.update({"token_expires_at": token.get().get("created_at")})
    gate.open()
    body = research.settled(run_id)
    assert body["run"]["failure_code"] == "access_changed"
    assert body["message"] is None


def completed(research: Research) -> str:
    research.world.gemini.answer_json(research.answer())
    run_id: str = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed"
    return run_id


def unavailable_because(research: Research, run_id: str, code: str) -> None:
    body = research.status(run_id).json()
    assert issues_for("research/status.response", body) == []
    assert (body["run"]["status"], body["run"]["failure_code"]) == ("unavailable", code)
    assert body["availability"]["reason"] == code
    assert body["message"] is None
    assert research.stored_run(run_id)["status"] == "completed"


def test_a_completed_result_whose_cited_evidence_was_removed_reads_unavailable(
    research: Research,
) -> None:
    run_id = completed(research)
    cited = next(iter(research.evidence))
    removed = research.api.post(
        "/research-api/evidence/remove", research.body(evidence_ids=[cited]), research.member
    )
    assert removed.status_code == 200, removed.text
    unavailable_because(research, run_id, "source_unavailable")


def test_a_completed_result_whose_cited_evidence_was_revised_reads_unavailable(
    research: Research,
) -> None:
    run_id = completed(research)
    cited = next(iter(research.evidence))
    assert research.upsert([{"evidence_id": cited, "text": "Revised."}]).status_code == 200
    unavailable_because(research, run_id, "context_changed")


def test_a_completed_result_stays_available_when_uncited_evidence_changes(
    research: Research,
) -> None:
    run_id = completed(research)
    assert research.upsert([{"text": "A new interview arrived."}]).status_code == 200
    body = research.status(run_id).json()
    assert (body["run"]["status"], body["availability"]["reason"]) == ("completed", None)
    assert body["message"] is not None


def test_a_completed_result_whose_asker_lost_access_reads_unavailable(research: Research) -> None:
    run_id = completed(research)
    admin("member", "add", "--tenant", research.workspace, "--user", "ana", "--role", "viewer")
    unavailable_because(research, run_id, "access_changed")


def test_the_asker_reading_its_own_result_is_checked_by_its_own_authentication(
    research: Research, counter: CallCounter
) -> None:
    run_id = completed(research)
    counter.calls.clear()
    assert research.status(run_id, research.member).json()["run"]["status"] == "completed"
    assert counter.calls == ["BatchGetDocuments", "BatchGetDocuments"]
    counter.calls.clear()
    assert research.status(run_id).json()["run"]["status"] == "completed"
    assert counter.calls == ["BatchGetDocuments"] * 3, "another reader reads the asker's grant"
    admin("member", "add", "--tenant", research.workspace, "--user", "ana", "--role", "viewer")
    body = research.status(run_id, research.member).json()
    assert (body["run"]["status"], body["run"]["failure_code"]) == ("unavailable", "access_changed")


def test_availability_reason_is_null_while_a_run_is_pending(
    research: Research, configure: Configure
) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    body = research.status(run_id).json()
    assert body["run"]["status"] in ("queued", "processing")
    assert body["availability"]["reason"] is None
    gate.open()
    research.settled(run_id)
