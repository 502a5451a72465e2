"""How evaluations move through the shared job lifecycle: the state a reader is shown
before anything is written, and how a stuck one freezes with the default target."""

from __future__ import annotations

from datetime import datetime

from google.cloud import firestore

from functions.agentconnect import store
from functions.agentconnect.documents import (
    EvaluationStatus,
    Outcome,
    PendingEvaluation,
    Summary,
)
from shared.instance import settings
from shared.jobs import Job, Lifecycle
from shared.retention import utcnow
from shared.store import Changes, as_stored, writable


def stuck(evaluation: PendingEvaluation | Summary, now: datetime | None = None) -> bool:
    """An evaluation pending past its queue deadline, or evaluating past its lease."""
    return LIFECYCLE.stuck(evaluation, now or utcnow())


def stuck_summary(evaluation: PendingEvaluation, now: datetime | None = None) -> Summary:
    """The frozen summary of an evaluation that no worker finished in time: the default
    target, and an outcome that says why. Reads show it at once; the sweep or the next
    delivery stores it."""
    waited = (
        "was never taken up"
        if evaluation["status"] == EvaluationStatus.PENDING
        else "did not finish"
    )
    reason = f"the evaluation {waited} in time; fell back to the default target"
    return fallback_summary(evaluation, reason, now)


def fallback_summary(
    evaluation: PendingEvaluation, reason: str, now: datetime | None = None
) -> Summary:
    """A frozen summary that applies the default target, for `reason`."""
    fallback = evaluation["fallback"]
    summary: Summary = {
        "seq": evaluation["seq"],
        "at": now or utcnow(),
        "sessionId": evaluation["sessionId"],
        "decisionId": fallback["decisionId"],
        "outcome": Outcome.FALLBACK,
        "reason": reason,
        "target": fallback["target"],
        "answer": None,
        "requestedModel": settings().agentconnect_model,
        "actualModel": None,
        "latencyMs": 0.0,
        "usage": {"inputTokens": 0, "outputTokens": 0},
        "status": EvaluationStatus.FROZEN,
        "details_expires_at": evaluation["created_at"],
    }
    if "instructions_version" in evaluation:
        summary["instructions_version"] = evaluation["instructions_version"]
    return summary


def _end(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, job: Job, kept: Changes
) -> str:
    """Freeze the default target, keeping the token usage of a worker that lost its lease."""
    transaction.set(ref, writable({**stuck_summary(as_stored(job, PendingEvaluation)), **kept}))
    return EvaluationStatus.FROZEN


LIFECYCLE = Lifecycle(
    store.EVALUATIONS,
    EvaluationStatus.PENDING,
    EvaluationStatus.EVALUATING,
    lambda config: config.agentconnect_lease_seconds,
    "evaluation",
    _end,
)
