"""How evaluations move through the shared job lifecycle: a stuck one freezes with the
default target."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions.agentconnect import store
from functions.agentconnect.documents import EvaluationStatus
from functions.agentconnect.views import stuck_summary
from shared.config import settings
from shared.jobs import Lifecycle


def _end_stuck(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, job: dict[str, Any]
) -> None:
    transaction.set(ref, stuck_summary(job))


LIFECYCLE = Lifecycle(
    collection=store.EVALUATIONS,
    waiting=EvaluationStatus.PENDING,
    running=EvaluationStatus.EVALUATING,
    lease=lambda: timedelta(seconds=settings().agentconnect_lease_seconds),
    end_stuck=_end_stuck,
)
