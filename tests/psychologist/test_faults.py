"""Every provider fault, a worker fault, a lost lease and a stuck queue settle an analysis."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from shared.clients import db
from shared.validation import issues_for
from tests.api import Configure, document, wait_for
from tests.faults import FAULT_IDS, FAULTS, Fault
from tests.psychologist.conftest import Psychologist, hypothesis
from tests.psychologist.test_analysis_flow import SESSION, reopening_log


def stored(psy: Psychologist, analysis_id: str) -> dict[str, Any]:
    return document(f"projects/{psy.project}/analyses/{analysis_id}")


@pytest.mark.parametrize("fault", FAULTS, ids=FAULT_IDS)
def test_a_provider_fault_settles_the_analysis_with_its_code(
    psy: Psychologist, configure: Configure, fault: Fault
) -> None:
    configure(**fault.env)
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    fault.script(psy.world.gemini)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    analysis_id = psy.analyse(SESSION)
    body = psy.settled(analysis_id)
    assert issues_for("psychologist/analysis", body) == []
    expected = ("completed", None) if fault.code is None else ("failed", fault.code)
    assert (body["status"], body["failureCode"]) == expected
    assert stored(psy, analysis_id)["status"] == body["status"]


def test_tokens_spent_before_a_fault_are_recorded_on_the_analysis(psy: Psychologist) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.finish("SAFETY")
    body = psy.settled(psy.analyse(SESSION))
    assert body["failureCode"] == "generation_unconfirmed"
    assert body["failureDetail"] == "Gemini finished with SAFETY"
    assert body["usage"] == psy.world.gemini.reported_usage()
    assert body["usage"]["thoughtTokens"] > 0


def test_an_unexpected_worker_fault_settles_the_analysis_as_failed(psy: Psychologist) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    chunks = db().collection(f"projects/{psy.project}/sessions/{SESSION}/event_chunks")
    for chunk in chunks.stream():
        chunk.reference.update({"events_json": "not json"})
    analysis_id = psy.analyse(SESSION)
    body = psy.settled(analysis_id)
    assert (body["status"], body["failureCode"]) == ("failed", "generation_unconfirmed")
    assert stored(psy, analysis_id)["status"] == "failed"


def test_an_answer_arriving_after_the_lease_leaves_the_analysis_failed_with_its_tokens_counted(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    gate = psy.world.gemini.held_answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    analysis_id = psy.analyse(SESSION)
    wait_for(lambda: stored(psy, analysis_id)["status"] == "processing")
    ref = db().document(f"projects/{psy.project}/analyses/{analysis_id}")
    ref.update({"lease_until": ref.get().get("created_at")})
    assert psy.analysis(analysis_id)["failureCode"] == "generation_unconfirmed"
    gate.open()
    wait_for(lambda: stored(psy, analysis_id)["status"] != "processing")
    assert stored(psy, analysis_id)["failure_code"] == "generation_unconfirmed"
    assert psy.hypotheses().json() == []
    shown = psy.analysis(analysis_id)
    assert shown["failureDetail"] == "the analysis did not finish before its deadline"
    reported = psy.world.gemini.reported_usage()
    assert {k: shown["usage"][k] for k in ("inputTokens", "outputTokens")} == {
        k: reported[k] for k in ("inputTokens", "outputTokens")
    }
    assert reported["inputTokens"] > 0


def test_the_sweep_settles_analyses_stuck_processing_or_queued(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    psy.world.gemini.answer_json({"hypotheses": []})
    done = [psy.settled(psy.analyse(SESSION))["id"]]
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    done.append(psy.settled(psy.analyse(SESSION))["id"])
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)
    base = f"projects/{psy.project}/analyses"
    db().document(f"{base}/{done[0]}").update({"status": "processing", "lease_until": long_ago})
    db().document(f"{base}/{done[1]}").update({"status": "queued", "created_at": long_ago})
    for analysis_id in done:
        assert psy.analysis(analysis_id)["failureCode"] == "generation_unconfirmed"
    assert sorted(psy.sweep()["analyses"]) == sorted(f"{base}/{a}" for a in done)
    for analysis_id in done:
        assert stored(psy, analysis_id)["status"] == "failed"
