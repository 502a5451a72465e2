"""The one job lifecycle of the three workers: claim with a lease, run, settle.

- **Claim**, in a transaction: a job waiting in its queue moves to its running status
  with a new claim id and a `lease_until`. A job found stuck (running past its lease, or
  waiting past its queue deadline) is settled there and then as readers already show it.
- **Run**: the work gets the claim and its deadline (the lease less a margin, so every
  Gemini call ends in time). Whatever it raises settles the job: a `GeminiError` by its
  kind, anything else logged with its stack as `generation_unconfirmed`.
- **Settle**, in one transaction, fenced by the lease: the result is written only while
  the claim still holds (same claim id, still running, lease not passed). A worker that
  lost its lease settles the job as readers were shown it, failed, and keeps its token
  count, so a result shown as failed never turns completed.

Every job document stores `status`, `claim` and `lease_until` under these names.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from shared import logs
from shared.clients import db
from shared.codes import JobStatus, ProviderFailure
from shared.config import Settings, settings
from shared.ids import new_ulid
from shared.retention import utcnow
from shared.store import Changes, transact

if TYPE_CHECKING:
    from shared.events import DocumentEvent
    from shared.gemini import GeminiError

Job = Mapping[str, Any]
"""Any API's job document; each API casts it to its own TypedDict."""
Result = TypeVar("Result")

UNCONFIRMED = ProviderFailure.GENERATION_UNCONFIRMED
SWEEP_BATCH = 200
"""How many stuck jobs (or silent sessions) one scheduled sweep ends, per kind."""
LEASE_MARGIN_S = 5.0
"""Time kept between the end of the last Gemini call and the end of the lease, to settle."""


def cause_of(error: GeminiError | None) -> str:
    """Why a job's work failed, in words: Gemini's fault, or an unexpected one."""
    return error.detail if error is not None else "the worker failed unexpectedly"


def log_settled(message: str, status: str, failure: str | None, **fields: Any) -> None:
    """The one line a settled job logs: WARNING with its code when it failed."""
    severity = logs.WARNING if status == JobStatus.FAILED else logs.INFO
    logs.log(severity, message, status=status, failure_code=failure, **fields)


class JobGoneError(LookupError):
    """The job's document does not exist: its event can never succeed."""


def failed(code: str) -> Changes:
    """The changes that settle a job as failed with `code`."""
    return {
        "status": JobStatus.FAILED,
        "failure_code": code,
        "lease_until": None,
        "finished_at": utcnow(),
    }


def queue_deadline(job: Job) -> datetime:
    """When a job that no worker took up counts as failed."""
    created: datetime = job["created_at"]
    return created + timedelta(seconds=settings().job_queue_seconds)


def stuck(job: Job, waiting: str, running: str, now: datetime) -> bool:
    """Whether a job sat running past its lease or waiting past its queue deadline."""
    if job["status"] == running:
        return job.get("lease_until") is None or bool(job["lease_until"] <= now)
    return job["status"] == waiting and queue_deadline(job) <= now


EndStuck = Callable[[firestore.Transaction, firestore.DocumentReference, Job], None]


def fail_unconfirmed(
    transaction: firestore.Transaction, ref: firestore.DocumentReference, _job: Job
) -> None:
    """How most jobs end stuck: failed, without knowing whether Gemini answered."""
    transaction.update(ref, failed(UNCONFIRMED))


@dataclass(frozen=True)
class Lifecycle:
    """How one API's jobs move: where they live, their statuses, how a stuck one ends."""

    collection: str
    """The collection group id of the job documents."""
    waiting: str
    running: str
    lease_seconds: Callable[[Settings], float]
    label: str
    """The log label that carries a job's id (`run_id`, `analysis_id`, `evaluation`)."""
    end_stuck: EndStuck = fail_unconfirmed
    """Write the terminal state of a job stuck past its lease or queue deadline."""

    def lease(self) -> timedelta:
        return timedelta(seconds=self.lease_seconds(settings()))

    def stuck(self, job: Job, now: datetime) -> bool:
        return stuck(job, self.waiting, self.running, now)


@dataclass(frozen=True)
class Claim:
    ref: firestore.DocumentReference
    claim_id: str
    job: Job
    """The job document as claimed, claim fields included."""
    lease_until: datetime

    @property
    def deadline(self) -> datetime:
        """When the work must be done, so that settling still fits in the lease."""
        return self.lease_until - timedelta(seconds=LEASE_MARGIN_S)

    def holds(self, current: Job | None, running: str, now: datetime) -> bool:
        return (
            current is not None
            and current["status"] == running
            and current.get("claim") == self.claim_id
            and current["lease_until"] > now
        )


Start = Callable[[firestore.Transaction, Job], Changes | None]
"""Extra changes for a job being claimed, or None when it must not start (the function
may have written the job's terminal state itself)."""


def claim(
    ref: firestore.DocumentReference, lifecycle: Lifecycle, start: Start | None = None
) -> Claim | None:
    """Claim the job, or None when it is not waiting (taken, settled, or ended as stuck).

    Raises `JobGoneError` when the document does not exist."""

    def apply(transaction: firestore.Transaction) -> Claim | None:
        snapshot = ref.get(transaction=transaction)
        if not snapshot.exists:
            raise JobGoneError(ref.path)
        job: Job = snapshot.to_dict() or {}
        logs.bind(**{lifecycle.label: ref.id}, trace=job.get("trace"))
        now = utcnow()
        if lifecycle.stuck(job, now):
            lifecycle.end_stuck(transaction, ref, job)
            return None
        if job["status"] != lifecycle.waiting:
            return None
        extra = start(transaction, job) if start is not None else {}
        if extra is None:
            return None
        lease_until = now + lifecycle.lease()
        changes = {
            **extra,
            "status": lifecycle.running,
            "claim": new_ulid(),
            "lease_until": lease_until,
            "started_at": now,
        }
        transaction.update(ref, changes)
        return Claim(ref, changes["claim"], {**job, **changes}, lease_until)

    return transact(apply)


def end_if_stuck(ref: firestore.DocumentReference, lifecycle: Lifecycle) -> bool:
    """End the job if it is stuck; True when this call ended it."""

    def apply(transaction: firestore.Transaction) -> bool:
        job = ref.get(transaction=transaction).to_dict()
        if job is None or not lifecycle.stuck(job, utcnow()):
            return False
        lifecycle.end_stuck(transaction, ref, job)
        return True

    return transact(apply)


def sweep(lifecycle: Lifecycle, batch: int) -> list[str]:
    """End up to `batch` stuck jobs of one kind, for the scheduled sweep; their paths."""
    now = utcnow()
    group = db().collection_group(lifecycle.collection)
    running = group.where(filter=FieldFilter("status", "==", lifecycle.running)).where(
        filter=FieldFilter("lease_until", "<=", now)
    )
    queued_before = now - timedelta(seconds=settings().job_queue_seconds)
    waiting = group.where(filter=FieldFilter("status", "==", lifecycle.waiting)).where(
        filter=FieldFilter("created_at", "<=", queued_before)
    )
    found = [s.reference for query in (running, waiting) for s in query.limit(batch).stream()]
    return [ref.path for ref in found if end_if_stuck(ref, lifecycle)]


def run(
    claimed: Claim,
    work: Callable[[Claim], Result],
    failed: Callable[[str, GeminiError | None], Result],
) -> Result:
    """The work's result; any exception becomes `failed(code, error)` instead."""
    from shared.gemini import GeminiError

    try:
        return work(claimed)
    except GeminiError as error:
        return failed(error.kind.value, error)
    except Exception:  # noqa: BLE001 - a claimed job settles whatever went wrong
        logs.error(
            "A job failed unexpectedly",
            job=claimed.ref.path,
            stack_trace=traceback.format_exc(),
        )
        return failed(UNCONFIRMED, None)


Snapshots = dict[str, firestore.DocumentSnapshot[Any]]
Write = Callable[[firestore.Transaction, Job | None, bool, Snapshots], Result]
"""(transaction, current job, whether the claim still holds, other documents by path)."""


def settle(
    claimed: Claim,
    running: str,
    write: Write[Result],
    refs: list[firestore.DocumentReference] | None = None,
) -> Result:
    """Run `write` in one transaction that first reads the job and `refs` together.

    `write` learns whether the claim still holds, and must write the result only then;
    otherwise it settles the job as readers were shown it, if it is still running."""
    client = db()

    def apply(transaction: firestore.Transaction) -> Result:
        snapshots = client.get_all([claimed.ref, *(refs or [])], transaction=transaction)
        by_path: Snapshots = {s.reference.path: s for s in snapshots}
        job = by_path[claimed.ref.path]
        current = job.to_dict() if job.exists else None
        return write(transaction, current, claimed.holds(current, running, utcnow()), by_path)

    return transact(apply)


def deliver(event: Any, process: Callable[[DocumentEvent], None]) -> None:
    """Hand a trigger's CloudEvent to its worker. An event that can never succeed (it
    cannot be decoded, or its document is gone) is logged and acknowledged; any other
    fault raises, so that the platform delivers the event again."""
    from shared.events import EventDecodeError, decode_document_event

    event_id = _event_id(event)
    with logs.scope():
        try:
            decoded = decode_document_event(event)
        except EventDecodeError as error:
            logs.warning(
                "Dropped an event that cannot be decoded", event_id=event_id, cause=str(error)
            )
            return
        try:
            process(decoded)
        except JobGoneError:
            logs.warning(
                "Dropped an event whose document is gone", event_id=event_id, document=decoded.path
            )


def _event_id(event: Any) -> str:
    try:
        return str(event["id"])
    except (KeyError, TypeError):
        return ""
