"""How research runs move through the shared job lifecycle, and how a stuck run ends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions.research import store
from functions.research.documents import RunStatus
from functions.research.views import effective_state
from shared.config import settings
from shared.jobs import UNCONFIRMED, Lifecycle, failed


def end(
    transaction: firestore.Transaction,
    ref: firestore.DocumentReference,
    run: dict[str, Any],
    code: str | None = None,
) -> None:
    """Fail the run (by default as readers now see it) and free its slot."""
    shown = code or effective_state(run)[1] or UNCONFIRMED
    transaction.update(ref, failed(shown))
    store.update_workspace(transaction, run["workspace_id"], release=ref.id)


LIFECYCLE = Lifecycle(
    collection=store.RUNS,
    waiting=RunStatus.QUEUED,
    running=RunStatus.PROCESSING,
    lease=lambda: timedelta(seconds=settings().research_lease_seconds),
    end_stuck=end,
)
