"""The refresh worker: claim a queued refresh, regroup (`refresh`), settle `completed`
with what it changed and spent, or `failed` with why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from google.cloud import firestore

from functions.psychologist.patterns import store
from functions.psychologist.patterns.lifecycle import COMPLETED, FAILED, LIFECYCLE
from functions.psychologist.patterns.refresh import Changed, Spent, refresh
from shared import jobs
from shared.jobs import Claim, Job, Settled, Snapshots, failure_changes
from shared.retention import utcnow

if TYPE_CHECKING:
    from shared.gemini import GeminiError


@dataclass
class RefreshWork:
    changed: Changed = field(default_factory=Changed)
    spent: Spent = field(default_factory=Spent)
    failure: str | None = None
    cause: str | None = None


def claim(params: Mapping[str, str]) -> tuple[Claim, RefreshWork] | None:
    ref = store.refresh_ref(params["projectId"], params["refreshId"])
    claimed = jobs.claim(ref, LIFECYCLE)
    return (claimed, RefreshWork()) if claimed is not None else None


def produce(claimed: Claim, work: RefreshWork) -> RefreshWork:
    job = claimed.job
    work.changed, work.spent = refresh(job["project_id"], job.get("agent"), job["created_at"])
    return work


def failed(_claimed: Claim, work: RefreshWork, code: str, error: GeminiError | None) -> RefreshWork:
    work.failure, work.cause = code, jobs.cause_of(error)
    return work


def settle(claimed: Claim, work: RefreshWork) -> Settled:
    spent = asdict(work.spent)

    def write(transaction: firestore.Transaction, _current: Job, _snapshots: Snapshots) -> str:
        if work.failure is not None:
            changes = {**failure_changes(work.failure), "failure_detail": work.cause}
            transaction.update(claimed.ref, {**changes, "spent": spent})
            return FAILED
        changed = asdict(work.changed)
        transaction.update(
            claimed.ref,
            {"status": COMPLETED, "completed_at": utcnow(), "changes": changed, "spent": spent},
        )
        return COMPLETED

    return jobs.settle(claimed, write, {"spent": spent})


def log(_claimed: Claim, work: RefreshWork, settled: Settled) -> None:
    jobs.log_settled(
        "Pattern refresh settled",
        settled.status,
        work.failure,
        created=len(work.changed.created),
        kept=len(work.changed.kept),
        labelled=len(work.changed.labelled),
        sessions=work.changed.sessions_ended,
    )


WORKER = jobs.Worker("Refresh", claim, produce, failed, settle, log)
