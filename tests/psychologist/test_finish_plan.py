"""An analysis's settling, from its work to the writes it plans while its claim holds."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from functions.psychologist.documents import Analysis, Hypothesis, Session, SessionState
from functions.psychologist.worker import OUTCOME_AGENTS, AnalysisWork, plan_finish

pytestmark = pytest.mark.pure

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ANALYSIS = cast(Analysis, {"id": "an-1", "project_id": "p", "session_id": "s"})
CALL = {
    "phase": "chunk",
    "modelVersion": "gemini-x-001",
    "inputTokens": 100,
    "outputTokens": 20,
    "cachedTokens": 0,
    "thoughtTokens": 5,
    "estimatedInputTokens": 90,
}


def session(state: SessionState) -> Session:
    return cast(Session, {"state": state, "cause": None, "ended_at": NOW})


def work(state: SessionState | None, **extra: Any) -> AnalysisWork:
    return AnalysisWork(
        session=session(state) if state else None,
        calls=[CALL],  # type: ignore[list-item]
        agent_events=Counter({"dev": 3, "qa": 1}),
        event_count=4,
        **extra,
    )


HYPOTHESIS = cast(Hypothesis, {"id": "h-1", "agenteAlvo": "dev"})


def test_a_completed_analysis_stores_its_hypotheses_and_names_them() -> None:
    plan = plan_finish(ANALYSIS, work(SessionState.CLOSED_ABNORMALLY), [HYPOTHESIS], NOW)
    assert plan.status == "completed"
    assert plan.hypotheses == [HYPOTHESIS]
    assert plan.analysis["hypothesis_ids"] == ["h-1"]
    assert (plan.analysis["status"], plan.analysis["lease_until"]) == ("completed", None)
    assert plan.analysis["finished_at"] == NOW
    assert plan.analysis["usage"] == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cached_tokens": 0,
        "thought_tokens": 5,
    }


def test_a_failed_analysis_stores_no_hypothesis_and_says_why() -> None:
    failing = work(SessionState.CLOSED_ABNORMALLY, failure="invalid_output", cause="no JSON")
    plan = plan_finish(ANALYSIS, failing, [HYPOTHESIS], NOW)
    assert plan.status == "failed"
    assert plan.hypotheses == []
    assert plan.analysis["hypothesis_ids"] == []
    assert plan.analysis["failure_code"] == "invalid_output"
    assert plan.analysis["failure_detail"] == "no JSON"
    assert plan.analysis["finished_at"] == NOW
    assert plan.analysis["usage"]["input_tokens"] == 100, "a failure keeps what it spent"


@pytest.mark.parametrize("failure", [None, "provider_unavailable"])
def test_an_ended_session_leaves_an_outcome_per_agent_whether_or_not_it_failed(
    failure: str | None,
) -> None:
    plan = plan_finish(ANALYSIS, work(SessionState.CLOSED, failure=failure), [], NOW)
    assert [(o["agent"], o["event_count"], o["abnormal_end"]) for o in plan.outcomes] == [
        ("dev", 3, 0),
        ("qa", 1, 0),
    ]


def test_the_outcome_of_an_abnormal_end_names_the_hypotheses_about_its_agent() -> None:
    plan = plan_finish(ANALYSIS, work(SessionState.CLOSED_ABNORMALLY), [HYPOTHESIS], NOW)
    by_agent = {o["agent"]: o for o in plan.outcomes}
    assert by_agent["dev"]["hypothesis_ids"] == ["h-1"]
    assert by_agent["qa"]["hypothesis_ids"] == []
    assert by_agent["dev"]["abnormal_end"] == 1
    assert by_agent["dev"]["model_versions"] == ["gemini-x-001"]


@pytest.mark.parametrize("state", [SessionState.OPEN, None], ids=["open", "gone"])
def test_an_open_or_missing_session_leaves_no_outcome(state: SessionState | None) -> None:
    assert plan_finish(ANALYSIS, work(state), [], NOW).outcomes == []


def test_only_the_busiest_agents_get_an_outcome() -> None:
    crowded = work(SessionState.CLOSED)
    crowded.agent_events = Counter({f"agent-{n}": n + 1 for n in range(OUTCOME_AGENTS + 5)})
    outcomes = plan_finish(ANALYSIS, crowded, [], NOW).outcomes
    assert len(outcomes) == OUTCOME_AGENTS
    assert {o["agent"] for o in outcomes} == {f"agent-{n}" for n in range(5, OUTCOME_AGENTS + 5)}
