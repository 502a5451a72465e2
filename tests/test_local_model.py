"""The local development model answers each worker's real prompt with an answer that passes
every check the worker makes, cites only what the prompt shows, and says where it came from."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ulid import ULID

from cli import local_model
from cli.gemini_stand_in import Recorded
from functions.agentconnect.checks import answer_schema, checked_answer
from functions.agentconnect.documents import Question, Rule
from functions.agentconnect.prompts import build_prompt as connect_prompt
from functions.agentconnect.selection import Step
from functions.psychologist.checks import (
    SessionFacts,
    checked_summary,
    output_issues,
    reasons_to_reject,
)
from functions.psychologist.documents import Event, Session, SessionState
from functions.psychologist.prompts import analysis_calls, combine_call
from functions.psychologist.signals import find_signals
from functions.psychologist.worker import gemini_output_schema, parse_output
from functions.research.checks import (
    gemini_answer_schema,
    issues_for_answer,
    parse_answer,
    rejections,
)
from functions.research.documents import Evidence
from functions.research.prompts import build_prompt
from shared.validation import Schema

pytestmark = pytest.mark.pure


def ask(prompt: str, schema: Schema) -> tuple[Any, str]:
    body = {
        "contents": [{"role": "user", "parts": [{"text": prompt}]}],
        "generationConfig": {"responseJsonSchema": schema},
    }
    reply = local_model.answer(Recorded(model="gemini-3.8-flash", body=body, headers={}))
    return json.loads(reply.text or ""), reply.model_version or ""


EVIDENCE: dict[str, Evidence] = {
    "3f2b7c1e-8a4d-4e6f-9b0a-1c2d3e4f5a6b": {
        "text": "Setup was slow and the wizard confusing. I gave up.",
        "source": {"title": "Interview 1"},
        "revision": 2,
    },
    "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d": {
        "text": "Three users said <b>it</b> was great",
        "source": None,
        "revision": 1,
    },
}


@pytest.mark.parametrize(
    "kind", ["question", "overview", "themes", "sentiment", "query_suggestions"]
)
def test_a_research_answer_passes_every_check_and_cites_what_the_prompt_shows(kind: str) -> None:
    prompt = build_prompt(kind, "Why is setup slow?" if kind == "question" else None, EVIDENCE)
    data, version = ask(prompt.text, gemini_answer_schema())
    assert version == "evidencia-local"
    assert issues_for_answer(data) == []
    assert rejections(parse_answer(data), kind, prompt.cited_revisions) == []


def test_a_quote_that_would_count_the_evidence_is_not_made() -> None:
    only = "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
    prompt = build_prompt("overview", None, {only: EVIDENCE[only]})
    data, _ = ask(prompt.text, gemini_answer_schema())
    assert "Three users" not in data["answer"]["statement"]
    assert rejections(parse_answer(data), "overview", prompt.cited_revisions) == []


def _log() -> tuple[Session, list[Event]]:
    start = datetime(2026, 11, 30, 9, tzinfo=UTC)
    kinds = ["task.opened"] + ["task.reopened"] * 3 + ["tool.error"] * 3
    events: list[Event] = []
    for index, kind in enumerate(kinds):
        at = start + timedelta(minutes=index)
        event: Event = {
            "id": str(ULID.from_datetime(at)),
            "agent": "dev-api",
            "type": kind,
            "at": at.isoformat().replace("+00:00", "Z"),
            "taskId": "T-1",
        }
        if kind == "tool.error":
            event["data"] = {"tool": "pytest", "error": "exit 1"}
        events.append(event)
    session: Session = {
        "state": SessionState.CLOSED_ABNORMALLY,
        "cause": "crash",
        "agents": ["dev-api"],
        "event_count": len(events),
        "created_at": start,
        "last_seen_at": start,
    }
    return session, events


def test_psychologist_hypotheses_come_from_the_signals_and_pass_every_check() -> None:
    session, events = _log()
    signals = find_signals(events, session)
    [call] = analysis_calls(session, signals, events, 100_000)
    data, _ = ask(call.text, gemini_output_schema())
    assert output_issues(data) == []
    findings = parse_output(data)["hypotheses"]
    assert len(findings) == len(signals) == 3
    facts = SessionFacts(
        agent_by_event={event["id"]: event["agent"] for event in events},
        agents=frozenset({"dev-api"}),
        ended_abnormally=True,
    )
    assert [reasons_to_reject(finding, facts) for finding in findings] == [[], [], []]
    found = parse_output(data)["summary"]
    assert found is not None
    summary = checked_summary(found, "dev-api", facts.agent_by_event)
    assert summary.refused == []
    assert summary.failure is not None, "the log's tool errors give its failure"
    merged = combine_call(session, signals, findings + findings, events)
    combined, _ = ask(merged.text, gemini_output_schema())
    assert len(combined["hypotheses"]) == 3


@pytest.mark.parametrize(
    ("question", "said", "expected"),
    [
        ({"type": "boolean", "instructions": "Does it fix a login bug?"}, "the login bug", True),
        ({"type": "boolean", "instructions": "Does it need a migration?"}, "a typo", False),
        (
            {
                "type": "choice",
                "instructions": "How large?",
                "criteria": {"small": "one file", "large": "many files across the repository"},
            },
            "touches many files across the repository",
            "large",
        ),
    ],
)
def test_an_agentconnect_answer_is_an_option_chosen_by_the_inputs_words(
    question: Question, said: str, expected: object
) -> None:
    rules: list[Rule] = []
    step = Step("initial", "caa985ad-f12f-4ef1-943f-c1812738ec7a", question, rules)
    data, _ = ask(connect_prompt(step, "A session", {"notes": said}), answer_schema(question))
    checked = checked_answer(question, data)
    assert checked is not None
    assert checked["value"] == expected


def test_a_coding_agents_plain_request_is_answered_in_text_that_says_it_is_made_up() -> None:
    """Gemini CLI asks with no response schema; the answer is text, not a schema's JSON."""
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "<session_context>...</session_context>"},
                    {"text": "Fix the  flaky\ntest."},
                ],
            }
        ],
        "generationConfig": {"temperature": 1},
    }
    reply = local_model.answer(Recorded(model="gemini-3.1-pro-preview", body=body, headers={}))
    assert reply.model_version == "evidencia-local"
    assert reply.text is not None
    assert reply.text.startswith(local_model.MADE_UP)
    assert reply.text.endswith("Asked: Fix the flaky test.")
    assert not reply.function_calls
