"""Checks on every model hypothesis and summary claim before it is stored. Nothing is
repaired: what the session's record contradicts is refused, with its reason."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from functions.psychologist.documents import (
    ClaimFinding,
    Finding,
    RefusedClaim,
    SummaryClaim,
    SummaryFinding,
)
from shared.validation import issues_for


@dataclass(frozen=True)
class SessionFacts:
    """What a hypothesis is checked against: the session's own record."""

    agent_by_event: dict[str, str]
    agents: frozenset[str]
    ended_abnormally: bool


def output_issues(output: Any, schema: str = "psychologist/model_output") -> list[str]:
    """Where a model's answer breaks its published schema (an analysis's by default)."""
    return [
        f"{'.'.join(str(p) for p in issue['path']) or '$'}: {issue['message']}"
        for issue in issues_for(schema, output)
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


@dataclass(frozen=True)
class CheckedSummary:
    """A session's summary as stored: each claim kept, or None and refused with its reason
    (`failure` is None and not refused when the session shows no failure)."""

    task: SummaryClaim | None
    ending: SummaryClaim | None
    failure: SummaryClaim | None
    refused: list[RefusedClaim]


def reason_to_refuse_claim(
    claim: ClaimFinding, agent: str, agent_by_event: Mapping[str, str]
) -> str | None:
    """What the session's record contradicts in one summary claim: every cited event is
    one of the session's, emitted by the session's agent."""
    cited = claim["eventIds"]
    unknown = [event_id for event_id in cited if event_id not in agent_by_event]
    others = [
        event_id
        for event_id in cited
        if event_id in agent_by_event and agent_by_event[event_id] != agent
    ]
    reasons = []
    if unknown:
        reasons.append(f"cites events that do not exist in this session: {', '.join(unknown)}")
    if others:
        reasons.append(
            f"cites events the session's agent {agent!r} did not emit: {', '.join(others)}"
        )
    return "; ".join(reasons) or None


def checked_summary(
    found: SummaryFinding, agent: str, agent_by_event: Mapping[str, str]
) -> CheckedSummary:
    """The summary's claims, each kept as stored or refused."""
    kept: dict[str, SummaryClaim | None] = {}
    refused: list[RefusedClaim] = []
    for name, claim in (
        ("task", found["task"]),
        ("ending", found["ending"]),
        ("failure", found["failure"]),
    ):
        reason = None if claim is None else reason_to_refuse_claim(claim, agent, agent_by_event)
        if reason is not None:
            refused.append({"claim": name, "reason": reason})
        kept[name] = (
            None
            if claim is None or reason is not None
            else {"text": claim["text"], "event_ids": claim["eventIds"]}
        )
    return CheckedSummary(kept["task"], kept["ending"], kept["failure"], refused)
