"""Every ended session is summarised: its task, how it ended and its main failure, each
citing events of the session's agent, checked as hypotheses are. An abnormal end's summary
comes in its analysis's own Gemini call; a normal end's from the summary model over the
log's compact view, through the Batch API when batches are on. A session left out is
stored as not summarised, with the reason, so that it stays counted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli.gemini_stand_in import PSYCHOLOGIST_SUMMARY, Recorded, Reply
from functions.loop import store as outcome_store
from functions.psychologist.prompts import FIRST_SHOWN, LAST_SHOWN
from shared.config import SUMMARY_MODEL
from shared.models import DEFAULT_MODEL
from tests.api import Configure, document, redeliver, wait_for
from tests.psychologist.conftest import Log, Psychologist, hypothesis
from tests.psychologist.test_analysis_flow import MISSING, SESSION

FIELDS = {
    "session_id",
    "agent",
    "ended_at",
    "state",
    "status",
    "reason",
    "task",
    "ending",
    "failure",
    "refused",
    "model",
    "source",
    "usage",
    "created_at",
    "expires_at",
}


@pytest.fixture
def summarising(psy: Psychologist, configure: Configure) -> Psychologist:
    """The Psychologist with normal ends summarised, as deployed."""
    configure(PSYCHOLOGIST_NORMAL_END_SUMMARIES="on")
    return psy


def summary_of(psy: Psychologist, session: str = SESSION) -> dict[str, Any]:
    return document(f"projects/{psy.project}/summaries/{session}")


def claim(text: str, *event_ids: str) -> dict[str, Any]:
    return {"text": text, "eventIds": list(event_ids)}


def failing_log() -> Log:
    """dev-api opens a task, runs pytest twice into the same error, and gives up; qa-bot
    says one thing."""
    log = Log()
    log.add("dev-api", "task.opened", task="T-1", title="Fix the login test")
    log.add("dev-api", "tool.call", task="T-1", tool="pytest")
    log.add("dev-api", "tool.error", task="T-1", tool="pytest", error="exit 1")
    log.add("qa-bot", "message", text="still red")
    log.add("dev-api", "tool.error", task="T-1", tool="pytest", error="exit 1")
    log.add("dev-api", "message", text="I give up.")
    return log


def test_an_abnormal_end_is_summarised_in_its_one_analysis_call(psy: Psychologist) -> None:
    log = failing_log()
    ids = [event["id"] for event in log.events]
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json(
        {
            "hypotheses": [hypothesis("dev-api", [ids[2], ids[4]])],
            "summary": {
                "task": claim("The agent was asked to fix the login test.", ids[0]),
                "ending": claim("It gave up after pytest failed twice.", ids[5]),
                "failure": claim("pytest kept exiting with 1.", ids[2], ids[4]),
            },
        },
        usage=(900, 120),
        thoughts=0,
    )
    ended = psy.end(SESSION, "closed_abnormally", "crash").json()
    analysis = psy.settled(ended["analysisId"])
    assert (analysis["status"], analysis["counts"]["hypotheses"]) == ("completed", 1)

    [asked] = psy.world.gemini.requests
    assert asked.model == DEFAULT_MODEL
    assert "summary" in asked.generation["responseJsonSchema"]["required"]
    stored = summary_of(psy)
    assert set(stored) == FIELDS
    assert {key: stored[key] for key in FIELDS - {"ended_at", "created_at", "expires_at"}} == {
        "session_id": SESSION,
        "agent": "dev-api",
        "state": "closed_abnormally",
        "status": "summarised",
        "reason": None,
        "task": {"text": "The agent was asked to fix the login test.", "event_ids": [ids[0]]},
        "ending": {"text": "It gave up after pytest failed twice.", "event_ids": [ids[5]]},
        "failure": {"text": "pytest kept exiting with 1.", "event_ids": [ids[2], ids[4]]},
        "refused": [],
        "model": DEFAULT_MODEL,
        "source": "analysis",
        "usage": {"input_tokens": 900, "output_tokens": 120},
    }
    session = document(f"projects/{psy.project}/sessions/{SESSION}")
    assert stored["ended_at"] == session["ended_at"]
    assert stored["expires_at"] > stored["created_at"]


def test_a_normal_end_is_summarised_by_the_cheap_model_over_a_compact_view(
    summarising: Psychologist,
) -> None:
    psy = summarising
    log = Log()
    opened = log.add("dev-api", "task.opened", task="T-1", title="Migrate the schema")
    middle = [log.add("dev-api", "tool.call", tool="psql", note="middle") for _ in range(60)]
    errors = [log.add("dev-api", "tool.error", tool="psql", error="lock timeout") for _ in range(3)]
    middle += [log.add("dev-api", "tool.call", tool="psql", note="middle") for _ in range(60)]
    last = [log.add("dev-api", "tool.call", tool="psql", note="tail") for _ in range(LAST_SHOWN)]
    psy.ingest(SESSION, log.events)
    ended = psy.end(SESSION, "closed").json()
    analysis = psy.settled(ended["analysisId"])
    assert (analysis["status"], analysis["hypothesisIds"]) == ("completed", [])

    [asked] = psy.world.gemini.requests
    assert (asked.model, asked.purpose, asked.batch) == (SUMMARY_MODEL, PSYCHOLOGIST_SUMMARY, None)
    shown = {line["id"] for line in fenced_events(asked)}
    assert shown >= {opened["id"]} | {e["id"] for e in errors} | {e["id"] for e in last}
    assert shown.isdisjoint(e["id"] for e in middle[4:]), "the first five, then errors and the last"
    assert len(shown) == FIRST_SHOWN + 3 + LAST_SHOWN
    assert len(asked.prompt) < len(json.dumps(log.events)) / 2

    stored = summary_of(psy)
    assert (stored["status"], stored["source"], stored["model"]) == (
        "summarised",
        "summary",
        SUMMARY_MODEL,
    )
    assert (stored["state"], stored["agent"], stored["refused"]) == ("closed", "dev-api", [])
    assert stored["task"]["event_ids"] == [opened["id"]]
    assert stored["ending"]["event_ids"] == [last[-1]["id"]]
    assert stored["failure"] == {"text": "lock timeout", "event_ids": [errors[0]["id"]]}
    reported = psy.world.gemini.reported_usage()
    assert stored["usage"] == {
        "input_tokens": reported["inputTokens"],
        "output_tokens": reported["outputTokens"],
    }
    assert analysis["usage"] == reported, "the summary's tokens count as the analysis's"


def fenced_events(asked: Recorded) -> list[dict[str, Any]]:
    inside = asked.prompt.split("<session_events>\n")[1].split("\n</session_events>")[0]
    return [json.loads(line) for line in inside.splitlines()]


def test_a_claim_citing_an_event_not_in_the_session_or_of_another_agent_is_refused(
    summarising: Psychologist,
) -> None:
    psy = summarising
    log = failing_log()
    ids = [event["id"] for event in log.events]
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_side(
        PSYCHOLOGIST_SUMMARY,
        {
            "task": claim("The agent fixed the login test.", ids[0], MISSING),
            "ending": claim("qa-bot said it was still red.", ids[3]),
            "failure": claim("pytest exited with 1.", ids[2]),
        },
    )
    psy.settled(psy.end(SESSION, "closed").json()["analysisId"])
    stored = summary_of(psy)
    assert stored["status"] == "summarised"
    assert (stored["task"], stored["ending"]) == (None, None)
    assert stored["failure"] == {"text": "pytest exited with 1.", "event_ids": [ids[2]]}
    assert stored["refused"] == [
        {"claim": "task", "reason": f"cites events that do not exist in this session: {MISSING}"},
        {
            "claim": "ending",
            "reason": f"cites events the session's agent 'dev-api' did not emit: {ids[3]}",
        },
    ]


def test_a_session_left_out_is_stored_not_summarised_with_its_reason(
    summarising: Psychologist, configure: Configure
) -> None:
    psy = summarising
    configure(PSYCHOLOGIST_PROJECT_TOKEN_BUDGET="150")
    log = failing_log()
    psy.ingest("spends-the-budget", log.events)
    psy.world.gemini.answer_json({"hypotheses": []}, usage=(150, 10), thoughts=0)
    assert psy.settled(psy.analyse("spends-the-budget"))["status"] == "completed"
    spent = len(psy.world.gemini.requests)

    for session, state in ((SESSION, "closed"), ("crashed", "closed_abnormally")):
        psy.ingest(session, log.events)
        psy.settled(psy.end(session, state).json()["analysisId"])
        stored = summary_of(psy, session)
        assert (stored["status"], stored["reason"], stored["state"]) == (
            "not_summarised",
            "over_budget",
            state,
        )
        assert (stored["task"], stored["ending"], stored["failure"]) == (None, None, None)
        assert (stored["model"], stored["usage"]) == (
            None,
            {"input_tokens": 0, "output_tokens": 0},
        )
    assert len(psy.world.gemini.requests) == spent, "no call past the budget"


def test_a_failed_summary_call_leaves_the_session_counted_and_its_analysis_complete(
    summarising: Psychologist,
) -> None:
    psy = summarising
    psy.ingest(SESSION, failing_log().events)
    for _ in range(3):
        psy.world.gemini.side_replies[PSYCHOLOGIST_SUMMARY].append(Reply(status=503))
    analysis = psy.settled(psy.end(SESSION, "closed").json()["analysisId"])
    assert analysis["status"] == "completed"
    stored = summary_of(psy)
    assert (stored["status"], stored["reason"]) == (
        "not_summarised",
        "failed: provider_unavailable",
    )
    assert stored["model"] == SUMMARY_MODEL


def test_an_analysis_delivered_again_leaves_its_summary_as_it_was(
    summarising: Psychologist,
) -> None:
    psy = summarising
    psy.ingest(SESSION, failing_log().events)
    analysis_id = psy.end(SESSION, "closed").json()["analysisId"]
    psy.settled(analysis_id)
    first = summary_of(psy)
    path = f"projects/{psy.project}/analyses/{analysis_id}"
    assert redeliver(psy.api, "psychologist_analysis_worker", path) == 200
    assert summary_of(psy) == first
    assert len(psy.world.gemini.requests) == 1


def test_with_batches_on_a_normal_end_is_summarised_through_the_batch_api(
    summarising: Psychologist, configure: Configure
) -> None:
    psy = summarising
    configure(PSYCHOLOGIST_GEMINI_BATCH="auto")
    log = failing_log()
    psy.ingest(SESSION, log.events)
    analysis_id = psy.end(SESSION, "closed").json()["analysisId"]

    def waiting() -> dict[str, Any] | None:
        shown = psy.analysis(analysis_id)
        return shown if shown["batch"] is not None and shown["status"] == "processing" else None

    assert wait_for(waiting)["batch"]["state"] == "pending"
    outcomes = list(outcome_store.outcomes(psy.project).stream())
    assert outcomes
    assert {(o.to_dict() or {})["ended_as"] for o in outcomes} == {"closed"}, (
        "a normal end's outcome does not wait on its summary's batch"
    )
    [asked] = psy.world.gemini.requests
    assert (asked.batch is not None, asked.model, asked.purpose) == (
        True,
        SUMMARY_MODEL,
        PSYCHOLOGIST_SUMMARY,
    )
    assert psy.sweep()["batches"] == [f"projects/{psy.project}/analyses/{analysis_id}"]
    done = psy.analysis(analysis_id)
    assert (done["status"], done["batch"]["state"], done["batch"]["fallback"]) == (
        "completed",
        "succeeded",
        None,
    )
    stored = summary_of(psy)
    assert (stored["status"], stored["source"], stored["model"]) == (
        "summarised",
        "summary",
        SUMMARY_MODEL,
    )
    assert stored["failure"]["event_ids"] == [log.events[2]["id"]]
    assert len(psy.world.gemini.requests) == 1, "no standard call was made"


def summary_only_in_the_last_call(request: Recorded) -> Reply:
    """A model over a chunked log: no hypothesis, and a summary only when the call sees
    the whole log (its parts' calls are told to give none)."""
    if "summary is null" in request.prompt:
        return Reply(text=json.dumps({"hypotheses": [], "summary": None}))
    events = fenced_events(request)
    first, last = events[0]["id"], events[-1]["id"]
    summary = {"task": claim("A task.", first), "ending": claim("An end.", last), "failure": None}
    return Reply(text=json.dumps({"hypotheses": [], "summary": summary}))


def test_a_chunked_abnormal_end_is_summarised_by_the_call_that_merges_its_parts(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_INPUT_TOKEN_BUDGET="3000")
    log = Log()
    for index in range(300):
        log.add("dev-api", "tool.call", task=f"T-{index % 7}", tool="pytest", note="x" * 40)
    psy.ingest(SESSION, log.events)
    psy.world.gemini.respond_with(summary_only_in_the_last_call)
    analysis = psy.settled(psy.end(SESSION, "closed_abnormally", "crash").json()["analysisId"])
    chunks = analysis["counts"]["chunks"]
    assert chunks > 1
    assert [call["phase"] for call in analysis["calls"]][-1] == "combine"
    assert analysis["counts"]["calls"] == chunks + 1, "merged though no part found anything"
    combine = psy.world.gemini.requests[-1]
    assert log.events[-1]["id"] in {event["id"] for event in fenced_events(combine)}
    stored = summary_of(psy)
    assert (stored["status"], stored["source"], stored["failure"]) == (
        "summarised",
        "analysis",
        None,
    )
    assert stored["ending"]["event_ids"] == [log.events[-1]["id"]]
