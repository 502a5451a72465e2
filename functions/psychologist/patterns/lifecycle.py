"""A refresh as a job of the shared lifecycle: created queued by the API or the sweep,
claimed by the worker its creation triggers, settled `completed` or `failed`. A stuck one
fails `generation_unconfirmed`, as analyses do."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from functions.psychologist.patterns import store
from shared.codes import ProviderFailure
from shared.ids import new_ulid
from shared.jobs import Job, Lifecycle, failure_changes
from shared.retention import utcnow
from shared.store import Changes

QUEUED, RUNNING, COMPLETED, FAILED = "queued", "running", "completed", "failed"


def _end(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, job: Job, kept: Changes
) -> str:
    waited = "was never taken up" if job["status"] == QUEUED else "did not finish"
    changes = {
        **kept,
        **failure_changes(ProviderFailure.GENERATION_UNCONFIRMED),
        "failure_detail": f"the refresh {waited} before its deadline",
    }
    transaction.update(ref, changes)
    return FAILED


LIFECYCLE = Lifecycle(
    store.REFRESHES,
    QUEUED,
    RUNNING,
    lambda config: config.psychologist_lease_seconds,
    "refresh_id",
    _end,
)


def new_refresh(project_id: str, agent: str | None, requested_by: str | None) -> dict[str, Any]:
    refresh_id = new_ulid()
    return {
        "id": refresh_id,
        "project_id": project_id,
        "agent": agent,
        "status": QUEUED,
        "requested_by": requested_by,
        "created_at": utcnow(),
    }
