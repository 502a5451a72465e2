"""How research runs move through the shared job lifecycle, and how a stuck run ends."""

from __future__ import annotations

from typing import cast

from google.cloud import firestore

from functions.research import store
from functions.research.documents import Run, RunStatus
from functions.research.views import effective_state
from shared.jobs import UNCONFIRMED, Job, Lifecycle, failed


def end(
    transaction: firestore.Transaction,
    ref: firestore.DocumentReference,
    job: Job,
    code: str | None = None,
) -> None:
    """Fail the run (by default as readers now see it) and free its slot."""
    run = cast(Run, job)
    store.release_slot(transaction, run["workspace_id"], ref.id, run)
    transaction.update(ref, failed(code or effective_state(run)[1] or UNCONFIRMED))


LIFECYCLE = Lifecycle(
    store.RUNS,
    RunStatus.QUEUED,
    RunStatus.PROCESSING,
    lambda config: config.research_lease_seconds,
    "run_id",
    end,
)
