"""A frozen choice as AgentConnect merges it into the session's outcome record, in the
project and under the agent name the session's link named when it started."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from google.cloud import firestore

from functions.agentconnect.documents import AgentSession, Answer, Drawn, Summary
from functions.agentconnect.selection import FALLBACK_ROUTE, target_key
from functions.loop import outcomes as outcome_records
from functions.loop.documents import ChoiceRecord
from functions.loop.outcomes import Merge
from shared.instance import settings

HAND_STARTED_KEY = "hand_started"
"""The target key and route of a session started by hand: no target of a selection has
it, so the selection report's per-target counts never hold a session that applied none."""
UNDRAWN: Drawn = {"explored": False, "share": 0.0, "propensity": 1.0, "candidates": 1}
"""A target no rule or draw chose (a fallback): given for certain."""


@dataclass(frozen=True)
class Chosen:
    """How the rules and the draw came to the summary's target."""

    route: str = FALLBACK_ROUTE
    answers: dict[str, Answer] = field(default_factory=dict)
    drawable: list[str] = field(default_factory=list)


def recorded(
    agent: firestore.DocumentReference,
    session_id: str,
    session: AgentSession,
    summary: Summary,
    chosen: Chosen,
) -> Merge | None:
    """The merge of the choice into the outcome record, when the session started with a
    link (`agent` is `orgs/{o}/agents/{a}`)."""
    link = session.get("outcome_source")
    if link is None:
        return None
    drawn_as = summary.get("drawn") or UNDRAWN
    started_by = session.get("started_by", "api")
    by_hand = started_by == "hook"
    choice: ChoiceRecord = {
        "org_id": agent.parent.parent.id,
        "agent_id": agent.id,
        "seq": summary["seq"],
        "selection_version": session["selection_version"],
        "started_at": session["created_at"],
        "target_key": HAND_STARTED_KEY if by_hand else target_key(summary["target"]),
        "target": dict(summary["target"]),
        "route": HAND_STARTED_KEY if by_hand else chosen.route,
        "explored": drawn_as["explored"],
        "propensity": drawn_as["propensity"],
        "candidates": drawn_as["candidates"],
        "candidate_keys": chosen.drawable,
        "answers": dict(chosen.answers),
        "trial_arms": [f"{each['trial_id']}:{each['arm']}" for each in session.get("trials", [])],
        "instructions_version": session.get("instructions_version"),
        "started_by": started_by,
    }
    retention = timedelta(days=settings().psychologist_hypothesis_retention_days)
    expires_at = summary["at"] + retention
    return outcome_records.chosen(link["project_id"], session_id, link["agent"], choice, expires_at)
