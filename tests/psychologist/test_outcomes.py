"""Every ended session leaves, per agent, an outcome record that outlives the log: how it
ended, counts by signal kind, the analyses and their hypotheses, and no user or model text.
A normal end counts them without asking Gemini."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from functions.loop import store as outcome_store
from functions.psychologist import store
from functions.psychologist.documents import AnalysisTrigger
from functions.psychologist.telemetry.endings import new_analysis
from functions.psychologist.worker import OUTCOME_AGENTS
from shared.clients import db
from shared.instance import settings
from shared.retention import utcnow
from shared.store import writable
from tests.psychologist.conftest import Log, Psychologist, hypothesis

SESSION = "01JC4Z8QK3M7YV2N5T9B0PXHRB"
FIELDS = {
    "project_id",
    "session_id",
    "agent",
    "ended_as",
    "cause",
    "ended_at",
    "event_count",
    "signals",
    "signal_kinds",
    "abnormal_end",
    "analysis_id",
    "hypothesis_ids",
    "model_versions",
    "usage_reported",
    "analysed_at",
    "expires_at",
}
"""A session fed by the events endpoint reports no tokens: `usage_reported` is 0 and the
spent figures are absent."""


def outcomes(psy: Psychologist) -> dict[str, dict[str, Any]]:
    found = db().collection(f"projects/{psy.project}/outcomes").stream()
    return {snapshot.get("agent"): snapshot.to_dict() or {} for snapshot in found}


def two_agents_log() -> tuple[Log, list[str]]:
    log = Log()
    log.add("dev-api", "task.opened", task="T-1")
    reopened = [log.add("dev-api", "task.reopened", task="T-1")["id"] for _ in range(3)]
    log.add("reviewer", "tool.call", task="T-1", tool="pytest", note="SECRET TEXT")
    return log, reopened


def test_an_analysed_abnormal_end_leaves_one_outcome_per_agent_with_no_text(
    psy: Psychologist,
) -> None:
    log, reopened = two_agents_log()
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    ended = psy.end(SESSION, "closed_abnormally", "crash").json()
    analysis = psy.settled(ended["analysisId"])
    assert analysis["status"] == "completed", analysis
    found = outcomes(psy)
    assert set(found) == {"dev-api", "reviewer"}
    dev, reviewer = found["dev-api"], found["reviewer"]
    assert set(dev) == FIELDS
    assert dev["session_id"] == SESSION
    assert (dev["ended_as"], dev["cause"]) == ("closed_abnormally", "crash")
    assert dev["event_count"] == 4
    assert reviewer["event_count"] == 1
    assert dev["signals"] == {"task_reopened": 1, "last_events_before_abnormal_end": 1}
    assert reviewer["signals"] == {"last_events_before_abnormal_end": 1}
    assert (dev["abnormal_end"], reviewer["abnormal_end"]) == (1, 1)
    assert dev["analysis_id"] == analysis["id"]
    assert dev["hypothesis_ids"] == analysis["hypothesisIds"]
    assert set(reviewer) == FIELDS - {"hypothesis_ids"}
    assert dev["model_versions"] == ["gemini-3.8-flash-001"]
    retention = timedelta(days=settings().psychologist_hypothesis_retention_days)
    assert abs(dev["expires_at"] - (utcnow() + retention)) < timedelta(minutes=5)
    assert "SECRET TEXT" not in repr(found)
    assert "reopened" not in repr({k: v for k, v in dev.items() if "signal" not in k})


def ended_with_gemini_failing(psy: Psychologist) -> tuple[dict[str, Any], list[str]]:
    """The session ended abnormally and its analysis failed (Gemini answered 400)."""
    log, reopened = two_agents_log()
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.world.gemini.fail(400)
    analysis = psy.settled(psy.end(SESSION, "closed_abnormally", "crash").json()["analysisId"])
    assert analysis["status"] == "failed", analysis
    return analysis, reopened


def test_a_failed_analysis_still_records_how_the_session_went(psy: Psychologist) -> None:
    analysis, _ = ended_with_gemini_failing(psy)
    dev = outcomes(psy)["dev-api"]
    assert dev["analysis_id"] == analysis["id"]
    assert dev["signals"]["task_reopened"] == 1
    assert "hypothesis_ids" not in dev
    assert "model_versions" not in dev


def test_asking_again_after_a_failed_analysis_replaces_its_outcomes(psy: Psychologist) -> None:
    _, reopened = ended_with_gemini_failing(psy)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    again = psy.settled(psy.analyse(SESSION))
    assert again["status"] == "completed", again
    found = outcomes(psy)
    assert len(found) == 2
    assert found["dev-api"]["analysis_id"] == again["id"]
    assert found["dev-api"]["hypothesis_ids"] == again["hypothesisIds"]
    paths = {outcome_store.outcome_ref(psy.project, SESSION, agent).path for agent in found}
    assert len(paths) == 2


def test_a_normal_end_records_outcomes_without_asking_gemini(psy: Psychologist) -> None:
    log, _ = two_agents_log()
    assert psy.ingest(SESSION, log.events).status_code == 200
    counted = psy.settled(psy.end(SESSION, "closed").json()["analysisId"])
    assert (counted["trigger"], counted["status"]) == ("session_end", "completed")
    found = outcomes(psy)
    dev = found["dev-api"]
    assert set(dev) == FIELDS - {"hypothesis_ids", "model_versions"}
    assert (dev["ended_as"], dev["abnormal_end"], dev["cause"]) == ("closed", 0, None)
    assert abs(dev["ended_at"] - utcnow()) < timedelta(minutes=5)
    assert dev["signals"] == {"task_reopened": 1}
    assert dev["signal_kinds"] == ["task_reopened"]
    assert (found["reviewer"]["signals"], found["reviewer"]["signal_kinds"]) == ({}, [])
    assert dev["analysis_id"] == counted["id"]
    assert psy.world.gemini.requests == []


def test_a_member_analysis_after_a_normal_end_adds_its_hypotheses_to_the_outcome(
    psy: Psychologist,
) -> None:
    log, reopened = two_agents_log()
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.settled(psy.end(SESSION, "closed").json()["analysisId"])
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    asked = psy.settled(psy.analyse(SESSION))
    assert asked["status"] == "completed", asked
    dev = outcomes(psy)["dev-api"]
    assert dev["hypothesis_ids"] == asked["hypothesisIds"]
    assert dev["model_versions"] == ["gemini-3.8-flash-001"]
    assert dev["signals"] == {"task_reopened": 1}


def test_a_normal_end_s_count_settling_after_a_member_s_analysis_keeps_its_hypotheses(
    psy: Psychologist,
) -> None:
    """The two may settle in either order: the count, which adds no hypothesis, leaves
    those of the member's analysis. (The count is queued again by hand here, so that it
    settles last.)"""
    log, reopened = two_agents_log()
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.settled(psy.end(SESSION, "closed").json()["analysisId"])
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    asked = psy.settled(psy.analyse(SESSION))
    assert asked["status"] == "completed", asked
    count_id, count = new_analysis(psy.project, SESSION, AnalysisTrigger.SESSION_END, None)
    store.analysis_ref(psy.project, count_id).create(writable(count))
    assert psy.settled(count_id)["status"] == "completed"
    dev = outcomes(psy)["dev-api"]
    assert dev["analysis_id"] == count_id
    assert dev["hypothesis_ids"] == asked["hypothesisIds"]
    assert dev["model_versions"] == ["gemini-3.8-flash-001"]


def test_an_open_session_analysed_by_hand_leaves_no_outcome(psy: Psychologist) -> None:
    log, reopened = two_agents_log()
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    assert psy.settled(psy.analyse(SESSION))["status"] == "completed"
    assert outcomes(psy) == {}


def test_a_log_of_many_agents_records_the_busiest_hundred(psy: Psychologist) -> None:
    """A log may name thousands of agents; their outcomes share the analysis's settling
    commit, so only the OUTCOME_AGENTS with the most events get one."""
    log = Log()
    for _ in range(3):
        log.add("busy", "tool.call", tool="pytest")
    for index in range(OUTCOME_AGENTS + 20):
        log.add(f"agent-{index:03}", "tool.call", tool="pytest")
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.world.gemini.answer_json({"hypotheses": []})
    analysis = psy.settled(psy.end(SESSION, "closed_abnormally", "crash").json()["analysisId"])
    assert analysis["status"] == "completed", analysis
    found = outcomes(psy)
    assert len(found) == OUTCOME_AGENTS
    assert found["busy"]["event_count"] == 3
