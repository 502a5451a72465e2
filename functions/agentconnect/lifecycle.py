"""How evaluations move through the shared job lifecycle: a stuck one freezes with the
default target."""

from __future__ import annotations

from typing import cast

from google.cloud import firestore

from functions.agentconnect import store
from functions.agentconnect.documents import EvaluationStatus, PendingEvaluation
from functions.agentconnect.views import stuck_summary
from shared.jobs import Job, Lifecycle
from shared.store import fields


def _end_stuck(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, job: Job
) -> None:
    transaction.set(ref, fields(stuck_summary(cast(PendingEvaluation, job))))


LIFECYCLE = Lifecycle(
    store.EVALUATIONS,
    EvaluationStatus.PENDING,
    EvaluationStatus.EVALUATING,
    lambda config: config.agentconnect_lease_seconds,
    "evaluation",
    _end_stuck,
)
