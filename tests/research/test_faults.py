"""Every provider fault, a worker fault and a lost lease settle a research run, end to end."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from google.cloud import firestore

from shared.clients import db
from shared.validation import issues_for
from tests.api import Configure, wait_for
from tests.faults import FAULT_IDS, FAULTS, Fault
from tests.research.conftest import Research


@pytest.mark.parametrize("fault", FAULTS, ids=FAULT_IDS)
def test_a_provider_fault_settles_the_run_with_its_code(
    research: Research, configure: Configure, fault: Fault
) -> None:
    configure(**fault.env)
    fault.script(research.world.gemini)
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    body = research.settled(run_id)
    assert issues_for("research/status.response", body) == []
    expected = ("completed", None) if fault.code is None else ("failed", fault.code)
    assert (body["run"]["status"], body["run"]["failure_code"]) == expected
    assert research.stored_run(run_id)["status"] == body["run"]["status"]


def test_a_429_is_retried_after_the_delay_gemini_asks_for(research: Research) -> None:
    research.world.gemini.fail(429, retry_after="1")
    research.world.gemini.answer_json(research.answer())
    assert research.settled(research.ask().json()["run"]["id"])["run"]["status"] == "completed"
    first, second = research.world.gemini.requests
    assert second.at - first.at >= 1.0


def test_tokens_spent_on_a_failed_answer_are_counted(research: Research) -> None:
    research.world.gemini.finish("SAFETY")
    body = research.settled(research.ask().json()["run"]["id"])
    assert body["run"]["failure_code"] == "generation_unconfirmed"
    assert research.tokens_used() == research.world.gemini.reported_tokens()


def test_an_unexpected_worker_fault_settles_the_run_as_failed(research: Research) -> None:
    broken = next(iter(research.evidence))
    evidence = f"workspaces/{research.workspace}/conversations/{research.conversation}/evidence"
    db().document(f"{evidence}/{broken}").update({"revision": firestore.DELETE_FIELD})
    run_id = research.ask().json()["run"]["id"]
    body = research.settled(run_id)
    assert (body["run"]["status"], body["run"]["failure_code"]) == (
        "failed",
        "generation_unconfirmed",
    )
    assert research.stored_run(run_id)["status"] == "failed"
    assert research.stored_run(run_id)["lease_until"] is None


def test_an_answer_arriving_after_the_lease_never_turns_a_failed_run_completed(
    research: Research,
) -> None:
    gate = research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    wait_for(lambda: research.stored_run(run_id)["status"] == "processing")
    ref = db().document(f"workspaces/{research.workspace}/runs/{run_id}")
    ref.update({"lease_until": ref.get().get("created_at")})
    shown = research.status(run_id).json()["run"]
    assert (shown["status"], shown["failure_code"]) == ("failed", "generation_unconfirmed")
    gate.open()
    wait_for(lambda: research.stored_run(run_id)["status"] != "processing")
    assert (research.stored_run(run_id)["status"], research.stored_run(run_id)["failure_code"]) == (
        "failed",
        "generation_unconfirmed",
    )
    assert research.status(run_id).json()["message"] is None
    assert research.tokens_used() == research.world.gemini.reported_tokens()
    assert research.slot_holders() == []


def test_the_sweep_settles_runs_stuck_processing_or_queued(research: Research) -> None:
    research.world.gemini.answer_json(research.answer())
    research.world.gemini.answer_json(research.answer())
    runs = [research.ask().json()["run"]["id"] for _ in range(2)]
    for run_id in runs:
        research.settled(run_id)
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)
    base = f"workspaces/{research.workspace}/runs"
    db().document(f"{base}/{runs[0]}").update({"status": "processing", "lease_until": long_ago})
    db().document(f"{base}/{runs[1]}").update({"status": "queued", "created_at": long_ago})
    for slot, run_id in enumerate(runs):
        until = datetime(2999, 1, 1, tzinfo=UTC)
        db().document(f"workspaces/{research.workspace}/slots/{slot}").set(
            {"run_id": run_id, "until": until}
        )
        db().document(f"{base}/{run_id}").update({"slot": str(slot)})
    for run_id in runs:
        shown = research.status(run_id).json()["run"]
        assert (shown["status"], shown["failure_code"]) == ("failed", "generation_unconfirmed")
    reply = research.api.private("/internal/research/sweep")
    assert reply.status_code == 200, reply.text
    assert sorted(reply.json()["runs"]) == sorted(f"{base}/{run_id}" for run_id in runs)
    assert research.slot_holders() == []
    for run_id in runs:
        assert research.stored_run(run_id)["status"] == "failed"
        assert research.stored_run(run_id)["failure_code"] == "generation_unconfirmed"
