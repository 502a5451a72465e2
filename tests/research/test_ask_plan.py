"""An ask's decision, from the conversation, key and budget it read to the writes it plans."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from functions.research.documents import Conversation, Remembered
from functions.research.service import Asked, AskPlan, Replay, plan_ask
from shared.config import load_settings
from shared.errors import ApiError, ErrorCode

pytestmark = pytest.mark.pure

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
CONFIG = replace(
    load_settings(),
    research_max_runs_per_conversation=3,
    research_workspace_token_budget=1_000,
    research_lease_seconds=300,
    job_queue_seconds=600,
)
ASKED = Asked(
    {"workspace_id": "w", "conversation_id": "c", "request_kind": "overview"},
    body_hash="hash-1",
    asker={"user_id": "u", "token_id": "t"},
    keyed=True,
    trace="trace-1",
)


def conversation(run_count: int = 0) -> Conversation:
    return {
        "workspace_id": "w",
        "title": None,
        "revision": 7,
        "evidence_revisions": {},
        "run_count": run_count,
        "created_by": "u",
        "created_at": NOW,
        "expires_at": NOW + timedelta(days=30),
    }


def planned(
    asked: Asked = ASKED,
    held: Conversation | None = None,
    remembered: Remembered | None = None,
    spent: bool = False,
) -> AskPlan:
    decided = plan_ask(asked, held or conversation(), remembered, spent, "run-1", NOW, CONFIG)
    assert isinstance(decided, AskPlan)
    return decided


def test_a_new_ask_queues_a_run_holding_a_slot_past_its_queue_deadline_and_lease() -> None:
    plan = planned()
    assert plan.run["status"] == "queued"
    assert plan.run["failure_code"] is None
    assert plan.run["generation"] == 1
    assert plan.run["conversation_revision"] == 7
    assert plan.run["trace"] == "trace-1"
    assert plan.run["asker"] == {"user_id": "u", "token_id": "t"}
    assert plan.slot == {"run_id": "run-1", "until": NOW + timedelta(seconds=600 + 300)}
    assert plan.run_count == 1
    assert plan.run["expires_at"] == NOW + timedelta(hours=24)


def test_a_key_is_remembered_with_the_run_and_expires_with_it() -> None:
    plan = planned()
    assert plan.remembered == {
        "run_id": "run-1",
        "request_hash": "hash-1",
        "expires_at": plan.run["expires_at"],
    }
    assert planned(replace(ASKED, keyed=False)).remembered is None


def test_a_full_conversation_fails_the_run_at_once_without_a_slot() -> None:
    plan = planned(held=conversation(run_count=3))
    assert (plan.run["status"], plan.run["failure_code"]) == ("failed", "conversation_full")
    assert plan.slot is None
    assert plan.run_count == 4, "a failed run still counts, so the next one fails too"
    assert planned(held=conversation(run_count=2)).run["status"] == "queued"


def test_a_spent_budget_fails_the_run_at_once_without_a_slot() -> None:
    plan = planned(spent=True)
    assert (plan.run["status"], plan.run["failure_code"]) == ("failed", "budget_exhausted")
    assert plan.slot is None
    assert planned(spent=False).run["status"] == "queued"


def test_a_full_conversation_is_said_before_a_spent_budget() -> None:
    plan = planned(held=conversation(run_count=3), spent=True)
    assert plan.run["failure_code"] == "conversation_full"


def test_a_remembered_key_replays_its_run_whatever_the_conversation_now_holds() -> None:
    remembered: Remembered = {"run_id": "run-0", "request_hash": "hash-1", "expires_at": NOW}
    decided = plan_ask(ASKED, conversation(run_count=3), remembered, True, "run-1", NOW, CONFIG)
    assert decided == Replay("run-0")


def test_a_remembered_key_with_another_request_is_a_conflict() -> None:
    remembered: Remembered = {"run_id": "run-0", "request_hash": "other", "expires_at": NOW}
    with pytest.raises(ApiError, match="different request") as refused:
        plan_ask(ASKED, conversation(), remembered, False, "run-1", NOW, CONFIG)
    assert refused.value.code == ErrorCode.CONFLICT
