"""A session start's decision, from the agent and session it read to the writes it plans."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from functions.agentconnect.documents import Agent, Fallback
from functions.agentconnect.service import (
    BUDGET_SPENT,
    HAND_STARTED,
    Starting,
    plan_start,
    selecting,
)
from shared.errors import ApiError, ErrorCode

pytestmark = pytest.mark.pure

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
RETENTION = timedelta(hours=24)
STARTING = Starting("s-1", "Fix the build", {"repo": "x"}, "u-1", trace="trace-1")
FALLBACK: Fallback = {
    "target": {
        "runtime": "claude-code",
        "model": "default-model",
        "effort": "low",
        "permissionMode": "plan",
        "fastMode": False,
    },
    "decisionId": "d-default",
}
AGENT: Agent = {"selection_version": 2, "selection_fallback": FALLBACK}


def test_the_first_start_of_an_agent_takes_seq_one_and_queues_a_pending_evaluation() -> None:
    plan = plan_start(STARTING, AGENT, False, NOW, RETENTION)
    assert plan.seq == 1
    assert plan.session == {
        "seq": 1,
        "title": "Fix the build",
        "input": {"repo": "x"},
        "selection_version": 2,
        "created_by": "u-1",
        "created_at": NOW,
        "expires_at": NOW + RETENTION,
        "started_by": "api",
    }
    assert plan.evaluation == {
        "seq": 1,
        "sessionId": "s-1",
        "status": "pending",
        "created_at": NOW,
        "fallback": FALLBACK,
        "trace": "trace-1",
    }


def test_a_start_takes_the_seq_after_the_last_one() -> None:
    plan = plan_start(STARTING, {**AGENT, "last_seq": 41}, False, NOW, RETENTION)
    assert (plan.seq, plan.session["seq"], plan.evaluation["seq"]) == (42, 42, 42)


def test_a_start_without_a_trace_stores_none() -> None:
    plan = plan_start(replace(STARTING, trace=None), AGENT, False, NOW, RETENTION)
    assert "trace" not in plan.evaluation


def test_past_the_budget_the_evaluation_is_frozen_on_the_default_target() -> None:
    evaluation = plan_start(STARTING, AGENT, True, NOW, RETENTION).evaluation
    assert evaluation["status"] == "frozen"
    assert evaluation["outcome"] == "fallback"  # type: ignore[typeddict-item]
    assert evaluation["target"] == FALLBACK["target"]  # type: ignore[typeddict-item]
    assert evaluation["reason"] == BUDGET_SPENT  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    "agent", [None, {}, {"last_seq": 3}], ids=["none", "empty", "no selection"]
)
def test_an_agent_without_a_selection_cannot_start_a_session(agent: Agent | None) -> None:
    with pytest.raises(ApiError, match="no model selection") as refused:
        selecting(agent)
    assert refused.value.code == ErrorCode.CONFLICT


def test_a_hand_started_session_is_frozen_at_its_start_without_asking_gemini() -> None:
    """A hook's start cannot apply a target: its evaluation is frozen at once (never
    pending, so no worker asks Gemini), even with budget left, saying why."""
    evaluation = plan_start(
        replace(STARTING, started_by="hook"), AGENT, False, NOW, RETENTION
    ).evaluation
    assert evaluation["status"] == "frozen"
    assert evaluation["reason"] == HAND_STARTED  # type: ignore[typeddict-item]
