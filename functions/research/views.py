"""Stored documents turned into the published response shapes."""

from __future__ import annotations

from datetime import datetime

from functions.research.documents import (
    Availability,
    Citation,
    Conversation,
    ConversationView,
    Evidence,
    EvidenceAtRevision,
    EvidenceRef,
    EvidenceState,
    MessageView,
    Run,
    RunStatus,
    RunView,
    StatementCitations,
    StatusView,
    SupportCheckView,
)
from functions.research.lifecycle import LIFECYCLE, effective_state
from shared.instance import settings
from shared.retention import iso

PROCESSOR = "Google Gemini"
TERMINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.EXPIRED}
)
PENDING_OR_AVAILABLE = frozenset({*LIFECYCLE.active, RunStatus.COMPLETED})


def evidence_at(cited: EvidenceRef, stored: Evidence | None) -> EvidenceAtRevision:
    """A cited item as it was at the cited revision: its text only while it still holds it."""
    at: EvidenceAtRevision = {
        **cited,
        "state": EvidenceState.REMOVED,
        "current_revision": None,
        "text": None,
        "source": None,
    }
    if stored is None:
        return at
    at["current_revision"] = stored["revision"]
    if stored["revision"] != cited["revision"]:
        return {**at, "state": EvidenceState.REVISED}
    return {
        **at,
        "state": EvidenceState.CURRENT,
        "text": stored["text"],
        "source": stored.get("source"),
    }


def conversation_view(conversation_id: str, data: Conversation) -> ConversationView:
    return {
        "id": conversation_id,
        "workspace_id": data["workspace_id"],
        "title": data.get("title"),
        "revision": data["revision"],
        "created_at": iso(data["created_at"]),
        "expires_at": iso(data["expires_at"]),
    }


def run_view(run_id: str, data: Run, now: datetime | None = None) -> RunView:
    status, failure = effective_state(data, now)
    return {
        "id": run_id,
        "workspace_id": data["workspace_id"],
        "conversation_id": data["conversation_id"],
        "conversation_revision": data["conversation_revision"],
        "generation": data["generation"],
        "request_kind": data["request_kind"],
        "status": status,
        "failure_code": failure,
        "created_at": iso(data["created_at"]),
        "expires_at": iso(data["expires_at"]),
        "processor": PROCESSOR,
        "model_id": data.get("model_id"),
        "model_version": data.get("model_version"),
    }


def message_view(data: Run, status: str) -> MessageView | None:
    message = data.get("message")
    if status != RunStatus.COMPLETED or not message:
        return None
    return {
        "id": message["id"],
        "run_id": message["run_id"],
        "role": "assistant",
        "question": message.get("question"),
        "answer": message["answer"],
        "created_at": iso(message["created_at"]),
        "expires_at": iso(data["expires_at"]),
    }


def availability(status: str, failure: str | None) -> Availability:
    """`reason` is null while a result is available or pending, else why there is none."""
    return {
        "configured": settings().gemini_configured,
        "reason": None if status in PENDING_OR_AVAILABLE else failure,
        "processor": PROCESSOR,
        "retention_hours": settings().retention_hours,
    }


def status_view(
    run_id: str, run: Run, conversation_revision: int, lost: str | None = None
) -> StatusView:
    """The contract's status body. `lost` is why a completed result is no longer current
    (its cited sources or its asker's authority changed): it reads `unavailable`."""
    view = run_view(run_id, run)
    if lost is not None and view["status"] == RunStatus.COMPLETED:
        view["status"], view["failure_code"] = RunStatus.UNAVAILABLE, lost
    return {
        "run": view,
        "message": message_view(run, view["status"]),
        "conversation_revision": conversation_revision,
        "availability": availability(view["status"], view["failure_code"]),
    }


def statement_of(path: str) -> str:
    """The statement a citation belongs to: `findings[1].evidence[0]` is `findings[1]`."""
    return path.split(".evidence[", maxsplit=1)[0]


def support_check_view(run: Run) -> SupportCheckView | None:
    """The model that found the run's statements supported; None when no check was made."""
    if not any(cited["supported"] is not None for cited in run.get("citations", [])):
        return None
    return {
        "model_id": run.get("model_id"),
        "model_version": run.get("support_check_model_version"),
    }


def statements(citations: list[Citation]) -> list[StatementCitations]:
    """The citations grouped by statement, in the answer's order."""
    grouped: dict[str, list[Citation]] = {}
    for cited in citations:
        grouped.setdefault(statement_of(cited["path"]), []).append(cited)
    return [{"path": path, "citations": found} for path, found in grouped.items()]
