"""Frozen evaluations in the contract's shape."""

from __future__ import annotations

from datetime import datetime

from functions.agentconnect.documents import (
    Details,
    EvaluationView,
    Fallback,
    FrozenSelection,
    InstructionsView,
    OutcomeSourceView,
    Selection,
    SelectionView,
    StepView,
    StoredSelection,
    Summary,
)
from functions.agentconnect.selection import steps_of
from functions.loop.documents import OutcomeSource, StoredInstructions
from shared import auth
from shared.clients import db
from shared.retention import is_expired, iso, utcnow
from shared.store import read_as


def details_shown(summary: Summary, details: Details, now: datetime) -> bool:
    """Whether a read shows the details: retained by their own expiry and by the
    summary's copy of it."""
    return summary["details_expires_at"] > now and not is_expired(details, now)


def evaluation_view(
    summary: Summary,
    details: Details | None,
    decided_under: Selection | None = None,
    now: datetime | None = None,
    title: str | None = None,
) -> EvaluationView:
    """The summary always; the details (when given, with the selection version they were
    decided under) only while they are retained.

    `detailsExpired` comes from the summary's own copy of the details' expiry, so a list
    that reads no details still says it truthfully. The session's title is user text and
    lives with the details: once they expire it reads as ""."""
    now = now or utcnow()
    retained = details is not None and not is_expired(details, now)
    if retained and details is not None and "title" in details:
        title = details["title"]
    view: EvaluationView = {
        "seq": summary["seq"],
        "at": iso(summary["at"]),
        "sessionId": summary["sessionId"],
        "title": title if title is not None else "",
        "decisionId": summary["decisionId"],
        "outcome": summary["outcome"],
        "reason": summary["reason"],
        "target": summary["target"],
        "answer": summary["answer"],
        "requestedModel": summary["requestedModel"],
        "actualModel": summary["actualModel"],
        "latencyMs": summary["latencyMs"],
        "usage": summary["usage"],
        "detailsExpired": summary["details_expires_at"] <= now,
    }
    if details is not None and decided_under is not None and details_shown(summary, details, now):
        steps = steps_asked(details, decided_under)
        view |= {
            "selection": frozen_selection(decided_under),
            "question": steps[-1]["question"],
            "input": details["input"],
            "fullAnswer": details["fullAnswer"],
            "chain": details["chain"],
            "steps": steps,
            "rawRequest": steps[-1]["rawRequest"],
            "rawResponse": steps[-1]["rawResponse"],
        }
    return view


def steps_asked(details: Details, decided_under: Selection) -> list[StepView]:
    """Each step the evaluation asked, with its question from the selection version. The
    walk ends at the step that decided, so the last one asked is the decision's."""
    questions = {step.step_id: step.question for step in steps_of(decided_under)}
    return [StepView(**record, question=questions[record["stepId"]]) for record in details["steps"]]


def frozen_selection(selection: Selection) -> FrozenSelection:
    """The rules a decision was made under, in the contract's shape."""
    first = selection["decision"]
    return {
        "decisionId": first["decisionId"],
        "rules": first["rules"],
        "steps": [
            {"decisionId": s["decisionId"], "rules": s["rules"], "id": s["id"]}
            for s in selection["steps"]
        ],
    }


def selection_view(org_id: str, agent_id: str, data: StoredSelection) -> SelectionView:
    return {
        "orgId": org_id,
        "agentId": agent_id,
        "version": data["version"],
        "createdAt": iso(data["created_at"]),
        "createdBy": data["created_by"],
        "selection": data["selection"],
    }


def instructions_view(stored: StoredInstructions) -> InstructionsView:
    origin = stored["origin"]
    return {
        "version": stored["version"],
        "text": stored["text"],
        "createdAt": iso(stored["created_at"]),
        "createdBy": stored["created_by"],
        "reason": stored["reason"],
        "from": None
        if origin is None
        else {
            "trialId": origin["trial_id"],
            "hypothesisId": origin["hypothesis_id"],
            "patternId": origin["pattern_id"],
        },
    }


def author_can_view(source: OutcomeSource) -> bool:
    """Whether the link's author may still view its project: read now, never cached, as
    a link never grants more than its author holds."""
    member = auth.member_ref(db(), "project", source["project_id"], source["created_by"])
    membership = read_as(member, auth.Membership)
    return membership is not None and auth.role_allows(membership.get("role"), "viewer")


def outcome_source_view(
    org_id: str, agent_id: str, source: OutcomeSource, *, author_can_view: bool
) -> OutcomeSourceView:
    return {
        "orgId": org_id,
        "agentId": agent_id,
        "projectId": source["project_id"],
        "agent": source["agent"],
        "createdBy": source["created_by"],
        "createdAt": iso(source["created_at"]),
        "authorCanView": author_can_view,
    }


def fallback_of(selection: Selection) -> Fallback:
    """What a session gets when no evaluation decides: the selection's default target,
    under its first decision."""
    return {
        "target": selection["default"].copy(),
        "decisionId": selection["decision"]["decisionId"],
    }
