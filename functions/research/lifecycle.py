"""How research runs move through the shared job lifecycle: how a stuck run ends, and the
state a reader is shown before anything is written."""

from __future__ import annotations

from datetime import datetime

from google.cloud import firestore

from functions.research import store
from functions.research.documents import FailureCode, Run, RunStatus
from shared.jobs import Job, Lifecycle, failure_changes
from shared.retention import utcnow
from shared.store import Changes, as_stored


def effective_state(data: Run, now: datetime | None = None) -> tuple[str, str | None]:
    """The run's status and failure code as a reader must see them now.

    A run past `expires_at` is expired even while Firestore still holds it; a run whose
    worker lease (or queue deadline) passed without an outcome failed unconfirmed. Both
    are derived on read so that a read never writes.
    """
    now = now or utcnow()
    if data["expires_at"] <= now:
        return RunStatus.EXPIRED, FailureCode.EXPIRED
    if LIFECYCLE.stuck(data, now):
        return RunStatus.FAILED, FailureCode.GENERATION_UNCONFIRMED
    return data["status"], data.get("failure_code")


def fail(
    transaction: firestore.Transaction,
    ref: firestore.DocumentReference,
    run: Run,
    code: str,
    kept: Changes | None = None,
) -> None:
    """Fail the run with `code` and free its slot (the slot is read, so call this before
    writing anything else)."""
    store.release_slot(transaction, run["workspace_id"], ref.id, run)
    transaction.update(ref, {**(kept or {}), **failure_changes(code)})


def end(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, job: Job, kept: Changes
) -> str:
    """End a run no worker settled in time as readers now see it, keeping `kept`."""
    run = as_stored(job, Run)
    fail(transaction, ref, run, effective_state(run)[1] or FailureCode.GENERATION_UNCONFIRMED, kept)
    return RunStatus.FAILED


LIFECYCLE = Lifecycle(
    store.RUNS,
    RunStatus.QUEUED,
    RunStatus.PROCESSING,
    lambda config: config.research_lease_seconds,
    "run_id",
    end,
)
