"""End to end: ask → the emulator's create event → the worker → status, through the local host."""

from __future__ import annotations

from shared.models import DEFAULT_MODEL
from shared.validation import issues_for
from tests.research.conftest import Research


def assert_contract(body: object) -> None:
    assert issues_for("research/status.response", body) == []


def test_ask_runs_through_the_emulator_trigger_and_completes_with_cited_answer(
    research: Research,
) -> None:
    research.world.gemini.answer_json(research.answer())
    asked = research.ask(request_kind="question", question="Why is onboarding slow?")
    assert asked.status_code == 202, asked.text
    run = asked.json()["run"]
    assert run["status"] == "queued"
    assert_contract(
        {
            "run": run,
            "message": None,
            "conversation_revision": 2,
            "availability": {
                "configured": True,
                "reason": None,
                "processor": "Google Gemini",
                "retention_hours": 24,
            },
        }
    )

    body = research.settled(run["id"])
    assert_contract(body)
    assert body["run"]["status"] == "completed", body
    assert body["run"]["model_id"] == DEFAULT_MODEL
    assert body["run"]["model_version"] == f"{DEFAULT_MODEL}-001"
    assert body["message"]["answer"]["answer"]["statement"] == "Users find onboarding slow."
    assert body["message"]["question"] == "Why is onboarding slow?"
    assert len(research.world.gemini.requests) == 1
