"""Every provider fault, a worker fault and a stuck evaluation end frozen, never 409 forever."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud.firestore import DocumentReference

from cli.gemini_stand_in import Gate
from shared.clients import db
from shared.validation import issues_for
from tests.agentconnect.conftest import AGENT, DEFAULT, Connect, answer
from tests.api import Configure, document, wait_for
from tests.faults import FAULT_IDS, FAULTS, Fault


def stored(connect: Connect, seq: int) -> dict[str, Any]:
    path = f"orgs/{connect.org}/agents/{AGENT}/evaluations/{seq}"
    return document(path)


@pytest.mark.parametrize("fault", FAULTS, ids=FAULT_IDS)
def test_a_provider_fault_freezes_the_evaluation(
    configured: Connect, configure: Configure, fault: Fault
) -> None:
    configure(**fault.env)
    fault.script(configured.world.gemini)
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    seq = configured.start()["seq"]
    body = configured.frozen(seq)
    assert issues_for("agentconnect/evaluation", body) == []
    if fault.code is None:
        assert body["outcome"] == "selected"
    else:
        assert (body["outcome"], body["target"]) == ("fallback", DEFAULT)
        assert body["chain"][0]["evaluation"]["status"] in ("failed", "invalid")
    assert stored(configured, seq)["status"] == "frozen"


def test_an_unexpected_worker_fault_freezes_the_fallback_and_says_why(
    configured: Connect,
) -> None:
    db().document(f"orgs/{configured.org}/agents/{AGENT}/selections/1").delete()
    body = configured.frozen(configured.start()["seq"])
    assert (body["outcome"], body["target"]) == ("fallback", DEFAULT)
    assert "failed (generation_unconfirmed" in body["reason"]
    assert configured.world.gemini.requests == []


def evaluating_past_its_lease(configured: Connect) -> tuple[Gate, int, DocumentReference]:
    """An evaluation whose worker waits on Gemini (behind the returned gate) while its
    lease is moved into the past: what a reader sees of a worker that lost its lease."""
    gate = configured.world.gemini.held_answer_json(answer(value=True, probability=0.9))
    seq = configured.start()["seq"]
    wait_for(lambda: stored(configured, seq)["status"] == "evaluating")
    assert configured.get(seq).status_code == 409
    ref = db().document(f"orgs/{configured.org}/agents/{AGENT}/evaluations/{seq}")
    ref.update({"lease_until": ref.get().get("created_at")})
    return gate, seq, ref


def test_an_evaluation_stuck_past_its_lease_reads_frozen_and_the_sweep_stores_it(
    configured: Connect,
) -> None:
    gate, seq, ref = evaluating_past_its_lease(configured)
    shown = configured.get(seq)
    assert shown.status_code == 200, shown.text
    assert issues_for("agentconnect/evaluation", shown.json()) == []
    assert (shown.json()["outcome"], shown.json()["target"]) == ("fallback", DEFAULT)
    assert "did not finish in time" in shown.json()["reason"]
    reply = configured.api.private("/internal/agentconnect/sweep")
    assert reply.status_code == 200, reply.text
    assert reply.json()["evaluations"] == [ref.path]
    assert stored(configured, seq)["outcome"] == "fallback"
    gate.open()
    wait_for(lambda: len(configured.world.gemini.requests) == 1)
    assert configured.frozen(seq)["outcome"] == "fallback"


def test_an_answer_arriving_after_the_lease_freezes_the_fallback_with_its_tokens_counted(
    configured: Connect,
) -> None:
    gate, seq, _ = evaluating_past_its_lease(configured)
    gate.open()
    wait_for(lambda: stored(configured, seq)["status"] == "frozen")
    body = configured.frozen(seq)
    assert (body["outcome"], body["target"]) == ("fallback", DEFAULT)
    assert "did not finish in time" in body["reason"]
    reported = configured.world.gemini.reported_usage()
    assert body["usage"] == {
        "inputTokens": reported["inputTokens"],
        "outputTokens": reported["outputTokens"],
    }
    assert reported["inputTokens"] > 0


def test_an_evaluation_never_taken_up_freezes_with_the_default_target(
    configured: Connect, configure: Configure
) -> None:
    configure(JOB_QUEUE_SECONDS="0")
    seq = configured.start()["seq"]
    body = configured.frozen(seq)
    assert (body["outcome"], body["target"]) == ("fallback", DEFAULT)
    assert "was never taken up" in body["reason"]
    wait_for(lambda: stored(configured, seq)["status"] == "frozen")
    assert configured.world.gemini.requests == []
