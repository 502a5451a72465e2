"""Frozen evaluations in the contract's shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.retention import is_expired, iso, utcnow

DETAIL_FIELDS = (
    "selection",
    "question",
    "input",
    "fullAnswer",
    "chain",
    "steps",
    "rawRequest",
    "rawResponse",
)


def evaluation_view(
    summary: dict[str, Any], details: dict[str, Any] | None, now: datetime | None = None
) -> dict[str, Any]:
    """The summary always; the details (when given) only while they are retained.

    `detailsExpired` comes from the summary's own copy of the details' expiry, so a list
    that reads no details still says it truthfully."""
    view = {
        "seq": summary["seq"],
        "at": iso(summary["at"]),
        "sessionId": summary["sessionId"],
        "title": summary["title"],
        "decisionId": summary["decisionId"],
        "outcome": summary["outcome"],
        "reason": summary["reason"],
        "target": summary["target"],
        "answer": summary["answer"],
        "requestedModel": summary["requestedModel"],
        "actualModel": summary["actualModel"],
        "latencyMs": summary["latencyMs"],
        "usage": summary["usage"],
    }
    expired = summary["details_expires_at"] <= (now or utcnow())
    view["detailsExpired"] = expired
    if not expired and details is not None and not is_expired(details, now):
        view.update({field: details[field] for field in DETAIL_FIELDS})
    return view


def selection_view(org_id: str, agent_id: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "orgId": org_id,
        "agentId": agent_id,
        "version": data["version"],
        "createdAt": iso(data["created_at"]),
        "createdBy": data["created_by"],
        "selection": data["selection"],
    }
