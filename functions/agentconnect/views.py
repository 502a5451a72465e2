"""Frozen evaluations in the contract's shape."""

from __future__ import annotations

from datetime import datetime

from functions.agentconnect.documents import (
    Details,
    EvaluationView,
    Fallback,
    Selection,
    SelectionView,
    StoredSelection,
    Summary,
)
from shared.retention import is_expired, iso, utcnow


def evaluation_view(
    summary: Summary,
    details: Details | None,
    now: datetime | None = None,
    title: str | None = None,
) -> EvaluationView:
    """The summary always; the details (when given) only while they are retained.

    `detailsExpired` comes from the summary's own copy of the details' expiry, so a list
    that reads no details still says it truthfully. The session's title is user text and
    lives with the details: once they expire it reads as ""."""
    now = now or utcnow()
    retained = details is not None and not is_expired(details, now)
    if retained and details is not None and "title" in details:
        title = details["title"]
    expired = summary["details_expires_at"] <= now
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
        "detailsExpired": expired,
    }
    if not expired and retained and details is not None:
        view |= {
            "selection": details["selection"],
            "question": details["question"],
            "input": details["input"],
            "fullAnswer": details["fullAnswer"],
            "chain": details["chain"],
            "steps": details["steps"],
            "rawRequest": details["rawRequest"],
            "rawResponse": details["rawResponse"],
        }
    return view


def selection_view(org_id: str, agent_id: str, data: StoredSelection) -> SelectionView:
    return {
        "orgId": org_id,
        "agentId": agent_id,
        "version": data["version"],
        "createdAt": iso(data["created_at"]),
        "createdBy": data["created_by"],
        "selection": data["selection"],
    }


def fallback_of(selection: Selection) -> Fallback:
    """What a session gets when no evaluation decides: the selection's default target,
    under its first decision."""
    return {
        "target": selection["default"].copy(),
        "decisionId": selection["decision"]["decisionId"],
    }
