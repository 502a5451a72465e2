"""How analyses move through the shared job lifecycle, and how a stuck one ends."""

from __future__ import annotations

from google.cloud import firestore

from functions.psychologist import store
from functions.psychologist.documents import AnalysisFailure, AnalysisStatus
from shared.jobs import Job, Lifecycle, failure_changes
from shared.store import Changes


def stuck_detail(analysis: Job) -> str:
    """Why an analysis no worker settled in time failed, in words."""
    waited = (
        "was never taken up" if analysis["status"] == AnalysisStatus.QUEUED else "did not finish"
    )
    return f"the analysis {waited} before its deadline"


def _end(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, job: Job, kept: Changes
) -> str:
    """Fail unconfirmed and say why, keeping the token usage of a worker that lost its lease."""
    changes = {
        **kept,
        **failure_changes(AnalysisFailure.GENERATION_UNCONFIRMED),
        "failure_detail": stuck_detail(job),
    }
    transaction.update(ref, changes)
    return AnalysisStatus.FAILED


LIFECYCLE = Lifecycle(
    store.ANALYSES,
    AnalysisStatus.QUEUED,
    AnalysisStatus.PROCESSING,
    lambda config: config.psychologist_lease_seconds,
    "analysis_id",
    _end,
)
"""A stuck analysis fails `generation_unconfirmed`."""
