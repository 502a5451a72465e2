"""How analyses move through the shared job lifecycle, and how a stuck one ends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions.psychologist import store
from functions.psychologist.documents import AnalysisStatus
from shared.config import settings
from shared.jobs import UNCONFIRMED, Lifecycle, failed


def _end_stuck(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, _analysis: dict[str, Any]
) -> None:
    transaction.update(ref, failed(UNCONFIRMED))


LIFECYCLE = Lifecycle(
    collection=store.ANALYSES,
    waiting=AnalysisStatus.QUEUED,
    running=AnalysisStatus.PROCESSING,
    lease=lambda: timedelta(seconds=settings().psychologist_lease_seconds),
    end_stuck=_end_stuck,
)
