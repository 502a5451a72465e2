"""End to end: a silent session is swept, analysed from its create event, and audited."""

from __future__ import annotations

import json
from typing import Any

from shared.clients import db
from shared.retention import utcnow
from shared.validation import issues_for
from tests.api import Configure, document, redeliver, wait_for
from tests.psychologist.conftest import Log, Psychologist, expire_indexed, hypothesis, indexed

SESSION = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
MISSING = "01JC4Z8QK3M7YV2N5T9B0PXZZZ"


def reopening_log() -> tuple[Log, list[str]]:
    log = Log()
    log.add("dev-api", "task.opened", task="T-1")
    reopened = [log.add("dev-api", "task.reopened", task="T-1")["id"] for _ in range(3)]
    log.add("dev-api", "tool.call", task="T-1", tool="pytest")
    return log, reopened


def test_a_silent_session_is_swept_analysed_and_only_valid_hypotheses_are_listed(
    psy: Psychologist, configure: Configure
) -> None:
    """A session goes silent past its heartbeat timeout: the sweep closes it as abnormal,
    which queues an analysis; of the two hypotheses Gemini proposes, the one citing an
    event the log does not hold is rejected with its reason, and only the grounded one is
    stored and listed, with its copied events and termination analysis."""
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1")
    log, reopened = reopening_log()
    assert psy.ingest(SESSION, log.events).json() == {"accepted": 5, "duplicates": 0}
    psy.world.gemini.answer_json(
        {
            "hypotheses": [
                hypothesis(
                    "dev-api", reopened, termination="The agent stopped after a long tool call."
                ),
                hypothesis("dev-api", [reopened[0], MISSING], observacao="It gave up."),
            ]
        }
    )
    assert wait_for(lambda: psy.sweep()["sessions"]) == [SESSION]

    session = document(f"projects/{psy.project}/sessions/{SESSION}")
    assert (session["state"], session["cause"]) == ("closed_abnormally", "heartbeat_timeout")
    analysis = psy.settled(session["analysis_id"])
    assert issues_for("psychologist/analysis", analysis) == []
    assert analysis["status"] == "completed", analysis
    assert analysis["trigger"] == "abnormal_end"
    assert analysis["counts"] == {
        "events": 5,
        "toolErrors": 0,
        "chunks": 1,
        "calls": 1,
        "hypotheses": 1,
        "rejected": 1,
    }
    assert analysis["rejected"][0]["reasons"] == [
        f"cites events that do not exist in this session: {MISSING}"
    ]
    assert analysis["usage"] == psy.world.gemini.reported_usage()
    assert {
        "kind": "task_reopened",
        "agent": "dev-api",
        "summary": "task T-1 reopened 3 times",
        "eventIds": reopened,
    } in analysis["signals"]

    listed = psy.hypotheses()
    assert listed.status_code == 200
    body = listed.json()
    assert issues_for("psychologist/hypotheses.response", body) == []
    assert len(body) == 1
    only = body[0]
    assert (only["agenteAlvo"], only["status"], only["evidenceEventIds"]) == (
        "dev-api",
        "proposed",
        reopened,
    )
    assert only["terminationAnalysis"] == {
        "causa": "heartbeat_timeout",
        "estadoDaSessao": "closed_abnormally",
        "analise": "The agent stopped after a long tool call.",
    }
    assert (only["decidedBy"], only["decidedAt"]) == (None, None)
    assert only["analysisId"] == analysis["id"]

    prompt = psy.world.gemini.requests[0].prompt
    assert "<session_events>" in prompt
    assert '"kind":"task_reopened"' in prompt


def test_a_duplicated_delivery_runs_the_analysis_once(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    analysis_id = psy.analyse(SESSION)
    psy.settled(analysis_id)
    document = f"projects/{psy.project}/analyses/{analysis_id}"
    assert redeliver(psy.api, "psychologist_analysis_worker", document) == 200
    assert len(psy.world.gemini.requests) == 1
    assert len(psy.hypotheses().json()) == 1


def test_a_normal_end_counts_its_log_without_gemini_and_an_abnormal_end_asks_it(
    psy: Psychologist,
) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    ended = psy.end(SESSION, "closed")
    assert ended.status_code == 200
    assert issues_for("psychologist/session", ended.json()) == []
    assert ended.json()["endedAt"] is not None
    counted = psy.settled(ended.json()["analysisId"])
    assert (counted["trigger"], counted["status"]) == ("session_end", "completed")
    assert [signal["kind"] for signal in counted["signals"]] == ["task_reopened"]
    assert (counted["hypothesisIds"], psy.world.gemini.requests) == ([], [])
    assert psy.end(SESSION, "closed").status_code == 409

    other = "01JC4Z8QK3M7YV2N5T9B0PXHRB"
    psy.ingest(other, [Log().add("qa-bot", "message")])
    psy.world.gemini.answer_json({"hypotheses": []})
    abnormal = psy.end(other, "closed_abnormally", "crash").json()
    assert (abnormal["state"], abnormal["cause"]) == ("closed_abnormally", "crash")
    assert psy.settled(abnormal["analysisId"])["status"] == "completed"


def test_hypotheses_are_rejected_when_their_agent_or_termination_does_not_hold(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    helper = log.add("qa-bot", "message", text="looks fine")
    psy.ingest(SESSION, log.events)
    psy.end(SESSION, "closed")
    checkable = [
        hypothesis("ghost", reopened),
        hypothesis("qa-bot", reopened),
        hypothesis("dev-api", reopened, termination="It crashed."),
        hypothesis("qa-bot", [helper["id"]], confiancaPercent=40),
    ]
    psy.world.gemini.answer_json({"hypotheses": [*checkable, hypothesis("dev-api", [])]})
    analysis = psy.settled(psy.analyse(SESSION))
    assert analysis["status"] == "failed", "an empty citation list breaks the output schema"
    assert analysis["failureCode"] == "invalid_output"

    psy.world.gemini.answer_json({"hypotheses": checkable})
    analysis = psy.settled(psy.analyse(SESSION))
    reasons = [r["reasons"] for r in analysis["rejected"]]
    assert reasons == [
        ["targets agent 'ghost', which does not appear in this session"],
        ["agent 'qa-bot' emitted none of the cited events"],
        ["has a termination analysis, but the session did not end abnormally"],
    ]
    assert [h["agenteAlvo"] for h in psy.hypotheses().json()] == ["qa-bot"]


def test_an_analysis_without_gemini_credentials_fails_not_configured(
    psy: Psychologist, configure: Configure
) -> None:
    configure(GEMINI_API_KEY=None, GOOGLE_API_KEY=None)
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    analysis = psy.settled(psy.analyse(SESSION))
    assert (analysis["status"], analysis["failureCode"]) == ("failed", "not_configured")
    assert psy.world.gemini.requests == []


def test_a_provider_failure_fails_the_analysis_and_records_the_calls(psy: Psychologist) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.fail(503, times=3)
    analysis = psy.settled(psy.analyse(SESSION))
    assert (analysis["status"], analysis["failureCode"]) == ("failed", "provider_unavailable")
    assert analysis["counts"]["calls"] == 1


def test_cited_events_can_be_read_back_for_audit(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    reply = psy.api.call(
        "GET", psy.path(f"/sessions/{SESSION}/events?ids={reopened[0]},{MISSING}"), token=psy.viewer
    )
    assert reply.status_code == 200, reply.text
    assert issues_for("psychologist/events_audit.response", reply.json()) == []
    assert reply.json() == {"events": [log.events[1]], "missing": [MISSING]}


def test_hypotheses_keep_copies_of_their_events(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    psy.settled(psy.analyse(SESSION))
    hypotheses = db().collection(f"projects/{psy.project}/hypotheses").stream()
    stored = next(iter(hypotheses)).to_dict() or {}
    assert stored["evidence_events"] == log.events[1:4]
    assert json.dumps(psy.hypotheses().json()).count("evidence_events") == 0


def test_an_analysis_whose_worker_died_reads_as_failed_once_its_lease_passes(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    analysis_id = psy.settled(psy.analyse(SESSION))["id"]
    ref = db().document(f"projects/{psy.project}/analyses/{analysis_id}")
    ref.update({"status": "processing", "lease_until": ref.get().get("created_at")})
    shown = psy.analysis(analysis_id)
    assert (shown["status"], shown["failureCode"]) == ("failed", "generation_unconfirmed")
    assert redeliver(psy.api, "psychologist_analysis_worker", ref.path) == 200
    assert ref.get().get("status") == "failed"
    assert len(psy.world.gemini.requests) == 1


def test_the_events_audit_reports_expired_events_as_missing(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    expire_indexed(psy.project, SESSION, utcnow(), [reopened[0]])
    reply = psy.api.call(
        "GET",
        psy.path(f"/sessions/{SESSION}/events?ids={reopened[0]},{reopened[1]}"),
        token=psy.viewer,
    )
    assert reply.json() == {"events": [log.events[2]], "missing": [reopened[0]]}


def test_each_event_is_stored_once_in_its_chunk_and_the_index_points_there(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    session = f"projects/{psy.project}/sessions/{SESSION}"
    own = indexed(psy.project, SESSION, reopened[1])
    chunk = db().document(f"{session}/event_chunks/{own.chunk}").get().to_dict() or {}
    assert json.loads(chunk["events_json"])[own.position] == log.events[2]


def test_an_event_whose_chunk_expired_reads_as_missing(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    session = f"projects/{psy.project}/sessions/{SESSION}"
    own = indexed(psy.project, SESSION, reopened[0])
    chunk = db().document(f"{session}/event_chunks/{own.chunk}")
    chunk.update({"expires_at": utcnow()})
    reply = psy.api.call(
        "GET", psy.path(f"/sessions/{SESSION}/events?ids={reopened[0]}"), token=psy.viewer
    )
    assert reply.json() == {"events": [], "missing": [reopened[0]]}


def test_a_hypothesis_citing_no_event_or_out_of_range_is_refused_by_the_schema(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    wrongs: list[dict[str, Any]] = [{"evidenceEventIds": []}, {"confiancaPercent": 150}]
    for wrong in wrongs:
        psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened, **wrong)]})
        analysis = psy.settled(psy.analyse(SESSION))
        assert analysis["failureCode"] == "invalid_output"
        field = next(iter(wrong))
        assert any(field in reason for reason in analysis["rejected"][0]["reasons"])
    assert psy.hypotheses().json() == []


def test_the_sweep_leaves_a_session_that_spoke_after_its_query_alone(psy: Psychologist) -> None:
    """Between the sweep's query and its transaction an event may arrive: the transaction
    checks the silence again, so such a session stays open."""
    from datetime import timedelta

    from functions.psychologist.telemetry.endings import end_if_still_silent
    from shared.retention import utcnow

    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    session = db().document(f"projects/{psy.project}/sessions/{SESSION}")
    assert not end_if_still_silent(session, utcnow() - timedelta(minutes=5))
    assert session.get().get("state") == "open"
    assert end_if_still_silent(session, utcnow() + timedelta(seconds=1))
    assert session.get().get("state") == "closed_abnormally"
