"""A project's Gemini spend has a ceiling, and an unchanged log is analysed once."""

from __future__ import annotations

import threading
from typing import Any

from shared.clients import db
from shared.validation import issues_for
from tests.api import Configure
from tests.psychologist.conftest import Psychologist, hypothesis
from tests.psychologist.test_analysis_flow import SESSION, reopening_log


def project_tokens(psy: Psychologist) -> int:
    shards = db().collection(f"projects/{psy.project}/usage").stream()
    return sum((shard.to_dict() or {}).get("tokens_used", 0) for shard in shards)


def ask(psy: Psychologist) -> dict[str, Any]:
    reply = psy.api.post(psy.path("/analyses"), {"sessionId": SESSION}, psy.member)
    assert reply.status_code == 202, reply.text
    body: dict[str, Any] = reply.json()
    assert issues_for("psychologist/analysis", body) == []
    return body


def test_a_project_past_its_token_budget_gets_its_analysis_failed_without_a_gemini_call(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_PROJECT_TOKEN_BUDGET="150")
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json(
        {"hypotheses": [hypothesis("dev-api", reopened)]}, usage=(120, 40), thoughts=0
    )
    first = psy.settled(psy.analyse(SESSION))
    assert first["status"] == "completed"
    assert project_tokens(psy) == 160 == psy.world.gemini.reported_tokens()
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    refused = ask(psy)
    assert (refused["status"], refused["failureCode"]) == ("failed", "budget_exhausted")
    assert psy.settled(refused["id"])["failureCode"] == "budget_exhausted"
    assert len(psy.world.gemini.requests) == 1


def test_an_abnormal_end_past_the_budget_fails_its_analysis_before_any_gemini_call(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_PROJECT_TOKEN_BUDGET="150")
    log, _ = reopening_log()
    psy.ingest("spent-first", log.events)
    psy.world.gemini.answer_json({"hypotheses": []}, usage=(150, 10), thoughts=0)
    assert psy.settled(psy.analyse("spent-first"))["status"] == "completed"
    psy.ingest(SESSION, log.events)
    ended = psy.end(SESSION, "closed_abnormally", "crash")
    assert ended.status_code == 200, ended.text
    analysis = psy.settled(ended.json()["analysisId"])
    assert (analysis["trigger"], analysis["failureCode"]) == ("abnormal_end", "budget_exhausted")
    assert len(psy.world.gemini.requests) == 1


def test_a_repeated_analysis_of_an_unchanged_log_is_answered_with_the_first(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    first = psy.settled(psy.analyse(SESSION))
    again = ask(psy)
    assert (again["id"], again["status"]) == (first["id"], "completed")
    assert len(psy.world.gemini.requests) == 1
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    psy.world.gemini.answer_json({"hypotheses": []})
    grown = psy.settled(psy.analyse(SESSION))
    assert grown["id"] != first["id"]
    assert grown["counts"]["events"] == len(log.events)
    assert len(psy.world.gemini.requests) == 2


def test_a_failed_analysis_of_an_unchanged_log_may_be_asked_for_again(
    psy: Psychologist,
) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.fail(400, message="bad request")
    failed = psy.settled(psy.analyse(SESSION))
    assert failed["status"] == "failed"
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    retried = psy.settled(psy.analyse(SESSION))
    assert (retried["status"], retried["id"] != failed["id"]) == ("completed", True)


def test_an_abnormal_end_analysis_answers_a_manual_one_asked_for_the_same_log(
    psy: Psychologist,
) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    gate = psy.world.gemini.held_answer_json({"hypotheses": []})
    queued = psy.end(SESSION, "closed_abnormally", "crash").json()["analysisId"]
    assert ask(psy)["id"] == queued
    gate.open()
    assert psy.settled(queued)["status"] == "completed"
    assert len(psy.world.gemini.requests) == 1


def test_repeats_racing_each_other_make_one_analysis(psy: Psychologist) -> None:
    log, _ = reopening_log()
    psy.ingest(SESSION, log.events)
    gate = psy.world.gemini.held_answer_json({"hypotheses": []})
    start = threading.Barrier(8)
    ids: list[str] = []

    def repeat() -> None:
        start.wait()
        ids.append(ask(psy)["id"])

    threads = [threading.Thread(target=repeat) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    gate.open()
    assert len(set(ids)) == 1
    assert psy.settled(ids[0])["status"] == "completed"
    analyses = db().collection(f"projects/{psy.project}/analyses").stream()
    assert [snapshot.id for snapshot in analyses] == ids[:1]
