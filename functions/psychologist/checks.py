"""Checks on every model hypothesis before it is stored. Nothing is repaired."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from functions.psychologist.documents import Finding
from shared.validation import issues_for


@dataclass(frozen=True)
class SessionFacts:
    """What a hypothesis is checked against: the session's own record."""

    agent_by_event: dict[str, str]
    agents: frozenset[str]
    ended_abnormally: bool


def output_issues(output: Any) -> list[str]:
    return [
        f"{'.'.join(str(p) for p in issue['path']) or '$'}: {issue['message']}"
        for issue in issues_for("psychologist/model_output", output)
    ]


def reasons_to_reject(hypothesis: Finding, facts: SessionFacts) -> list[str]:
    """What the session's record contradicts in a schema-valid hypothesis (the published
    schema already requires a cited event and a confidence within 0..100)."""
    reasons: list[str] = []
    cited = hypothesis["evidenceEventIds"]
    unknown = [event_id for event_id in cited if event_id not in facts.agent_by_event]
    if unknown:
        reasons.append(f"cites events that do not exist in this session: {', '.join(unknown)}")
    agent = hypothesis["agenteAlvo"]
    if agent not in facts.agents:
        reasons.append(f"targets agent {agent!r}, which does not appear in this session")
    elif not any(facts.agent_by_event.get(event_id) == agent for event_id in cited):
        reasons.append(f"agent {agent!r} emitted none of the cited events")
    if hypothesis.get("terminationAnalysis") is not None and not facts.ended_abnormally:
        reasons.append("has a termination analysis, but the session did not end abnormally")
    return reasons
