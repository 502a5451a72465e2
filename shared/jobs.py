"""The one job lifecycle of the three workers: claim with a lease, run, settle.

- **Claim**, in a transaction: a job waiting in its queue moves to its running status
  with a new claim id and a `lease_until`. A job found stuck (running past its lease, or
  waiting past its queue deadline) is ended there and then as readers already show it.
- **Run**: the work gets the claim and its deadline (the lease less a margin, so every
  Gemini call ends in time). Whatever it raises settles the job: a `GeminiError` by its
  kind, anything else logged with its stack as `generation_unconfirmed`.
- **Settle**, in one transaction, fenced by the lease: the worker's result is written only
  while its claim holds (same claim id, still running, lease not passed). A worker that
  lost its lease ends the job as readers were shown it, the way the sweep would, and keeps
  its token count, so a result shown as failed never turns completed and no spent token
  goes uncounted.

`process` runs these steps for any API's `Worker`. Every job document stores `status`,
`claim` and `lease_until` under these names.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from shared import logs
from shared.clients import db
from shared.codes import JobStatus, ProviderFailure
from shared.config import LEASE_MARGIN_S, Settings
from shared.ids import new_ulid
from shared.instance import settings
from shared.retention import utcnow
from shared.store import Changes, read_all, read_fields, transact

if TYPE_CHECKING:
    from shared.gemini import GeminiError

Job = Mapping[str, Any]
"""Any API's job document; each API casts it to its own TypedDict."""
Result = TypeVar("Result")
WorkInput = TypeVar("WorkInput")
"""What a claimed job's work starts from (read when it was claimed)."""
WorkResult = TypeVar("WorkResult")
"""What the work produced, or how it failed: what the job settles with."""

SWEEP_BATCH = 200
"""How many stuck jobs (or silent sessions) one scheduled sweep ends, per kind."""


def cause_of(error: GeminiError | None) -> str:
    """Why a job's work failed, in words: Gemini's fault, or an unexpected one."""
    return error.detail if error is not None else "the worker failed unexpectedly"


def log_settled(message: str, status: str, failure: str | None, **fields: Any) -> None:
    """The one line a settled job logs: WARNING with its code when it failed."""
    severity = logs.WARNING if status == JobStatus.FAILED else logs.INFO
    logs.log(severity, message, status=status, failure_code=failure, **fields)


class JobGoneError(LookupError):
    """The job's document does not exist: its event can never succeed."""


def failure_changes(code: str) -> Changes:
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


End = Callable[[firestore.Transaction, firestore.DocumentReference, Job, Changes], str]
"""Write the terminal state of a job no worker settled in time, as readers already show
it, with `kept` (the token usage of a worker that lost its lease, else nothing); returns
the status written."""


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
    end: End
    """How a job no worker settled in time ends (stuck, or its claim lost its lease)."""

    @property
    def active(self) -> tuple[str, str]:
        """The statuses of a job not yet settled."""
        return self.waiting, self.running

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
    lifecycle: Lifecycle

    @property
    def deadline(self) -> datetime:
        """When the work must be done, so that settling still fits in the lease."""
        return self.lease_until - timedelta(seconds=LEASE_MARGIN_S)

    def holds(self, current: Job, now: datetime) -> bool:
        return (
            current["status"] == self.lifecycle.running
            and current.get("claim") == self.claim_id
            and current["lease_until"] > now
        )


Start = Callable[[firestore.Transaction, Job], Changes | None]
"""Extra changes for a job being claimed, or None when it must not start (the function
may have written the job's terminal state itself)."""


class ClaimStep(Enum):
    END_STUCK = "end_stuck"
    """It sat running past its lease or waiting past its queue deadline: end it now."""
    SKIP = "skip"
    """It is not waiting (taken or settled): leave it."""
    TAKE = "take"


def claim_step(job: Job, lifecycle: Lifecycle, now: datetime) -> ClaimStep:
    """What a worker does with a job it was handed, as read."""
    if lifecycle.stuck(job, now):
        return ClaimStep.END_STUCK
    if job["status"] != lifecycle.waiting:
        return ClaimStep.SKIP
    return ClaimStep.TAKE


def claim_changes(extra: Changes, lifecycle: Lifecycle, now: datetime, claim_id: str) -> Changes:
    """What taking a job writes: `extra`, then its running status under a new claim."""
    return {
        **extra,
        "status": lifecycle.running,
        "claim": claim_id,
        "lease_until": now + lifecycle.lease(),
        "started_at": now,
    }


def claim(
    ref: firestore.DocumentReference, lifecycle: Lifecycle, start: Start | None = None
) -> Claim | None:
    """Claim the job, or None when it is not waiting (taken, settled, or ended as stuck).

    Raises `JobGoneError` when the document does not exist."""

    def apply(transaction: firestore.Transaction) -> Claim | None:
        job: Job | None = read_fields(ref.get(transaction=transaction))
        if job is None:
            raise JobGoneError(ref.path)
        logs.bind(**{lifecycle.label: ref.id}, trace=job.get("trace"))
        now = utcnow()
        step = claim_step(job, lifecycle, now)
        if step is ClaimStep.END_STUCK:
            lifecycle.end(transaction, ref, job, {})
        if step is not ClaimStep.TAKE:
            return None
        extra = start(transaction, job) if start is not None else {}
        if extra is None:
            return None
        changes = claim_changes(extra, lifecycle, now, new_ulid())
        transaction.update(ref, changes)
        return Claim(ref, changes["claim"], {**job, **changes}, changes["lease_until"], lifecycle)

    return transact(apply)


def end_if_stuck(ref: firestore.DocumentReference, lifecycle: Lifecycle) -> bool:
    """End the job if it is stuck; True when this call ended it."""

    def apply(transaction: firestore.Transaction) -> bool:
        job = read_fields(ref.get(transaction=transaction))
        if job is None or not lifecycle.stuck(job, utcnow()):
            return False
        lifecycle.end(transaction, ref, job, {})
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
    on_failure: Callable[[str, GeminiError | None], Result],
) -> Result:
    """The work's result; any exception becomes `on_failure(code, error)` instead."""
    from shared.gemini import GeminiError

    try:
        return work(claimed)
    except GeminiError as error:
        return on_failure(error.kind.value, error)
    except Exception:  # noqa: BLE001 - a claimed job settles whatever went wrong
        logs.error(
            "A job failed unexpectedly",
            job=claimed.ref.path,
            stack_trace=traceback.format_exc(),
        )
        return on_failure(ProviderFailure.GENERATION_UNCONFIRMED, None)


Snapshots = dict[str, firestore.DocumentSnapshot[Any]]
Write = Callable[[firestore.Transaction, Job, Snapshots], str]
"""Write the worker's result, given the job as it stands and the other documents read by
path; returns the status written. Called only while the claim holds."""


@dataclass(frozen=True)
class Settled:
    status: str
    """The job's status once settled (`missing` when its document is gone)."""
    stored: bool
    """Whether this worker's result was written (False when its claim no longer held)."""


class SettleStep(Enum):
    STORE = "store"
    """The claim holds: write the worker's result."""
    END_LOST = "end_lost"
    """Still running under a claim whose lease passed: end it as readers were shown it."""
    LEAVE = "leave"
    """No longer running (settled by the sweep or a cancel) or gone: leave it."""


def settle_step(claimed: Claim, current: Job | None, now: datetime) -> SettleStep:
    """What settling does with the job as it stands."""
    if current is None or current["status"] != claimed.lifecycle.running:
        return SettleStep.LEAVE
    return SettleStep.STORE if claimed.holds(current, now) else SettleStep.END_LOST


def settle(
    claimed: Claim,
    write: Write,
    kept: Changes,
    refs: Sequence[firestore.DocumentReference] = (),
    always: Callable[[firestore.Transaction], None] | None = None,
    always_reading: Callable[[firestore.Transaction, Snapshots], None] | None = None,
) -> Settled:
    """Settle the job in one transaction that first reads it and `refs` together.

    While the claim holds, `write` stores the result. A job still running under a claim
    that lost its lease ends as readers were shown it, with `kept` (the worker's token
    usage, in the job's own shape); a job no longer running is left as it is. `always`
    writes what is due whatever the job's state (a token count), after the rest;
    `always_reading` does the same given what was read (a count that reads `refs`)."""

    def apply(transaction: firestore.Transaction) -> Settled:
        by_path = read_all([claimed.ref, *refs], transaction)
        current = read_fields(by_path[claimed.ref.path])
        step = settle_step(claimed, current, utcnow())
        if current is None or step is SettleStep.LEAVE:
            settled = Settled(current["status"] if current else "missing", stored=False)
        elif step is SettleStep.STORE:
            settled = Settled(write(transaction, current, by_path), stored=True)
        else:
            status = claimed.lifecycle.end(transaction, claimed.ref, current, kept)
            settled = Settled(status, stored=False)
        if always is not None:
            always(transaction)
        if always_reading is not None:
            always_reading(transaction, by_path)
        return settled

    return transact(apply)


@dataclass(frozen=True)
class Worker(Generic[WorkInput, WorkResult]):
    """One API's work on its jobs, as the steps `process` runs in order."""

    noun: str
    """What a job is called in log lines: `Run`, `Analysis`, `Evaluation`."""
    claim: Callable[[Mapping[str, str]], tuple[Claim, WorkInput] | None]
    """Claim the job named by the event document's path parameters, with what the work
    starts from; None when it is not waiting (taken, settled, or ended as stuck)."""
    produce: Callable[[Claim, WorkInput], WorkResult]
    failed: Callable[[Claim, WorkInput, str, GeminiError | None], WorkResult]
    """The outcome of work that raised, with its failure code and Gemini's error if any."""
    settle: Callable[[Claim, WorkResult], Settled]
    log: Callable[[Claim, WorkResult, Settled], None]


def process(
    worker: Worker[WorkInput, WorkResult], params: Mapping[str, str], event_id: str
) -> None:
    """Claim, run, settle and log one job."""
    claimed = worker.claim(params)
    if claimed is None:
        logs.info(f"{worker.noun} already claimed or settled", event_id=event_id)
        return
    job, context = claimed
    outcome = run(
        job,
        lambda started: worker.produce(started, context),
        lambda code, error: worker.failed(job, context, code, error),
    )
    worker.log(job, outcome, worker.settle(job, outcome))


def deliver(event: Any, document: str, worker: Worker[Any, Any]) -> None:
    """Hand a trigger's CloudEvent to its worker; `document` is the registry's pattern of
    the documents whose creation runs it. An event that can never succeed (it cannot be
    decoded, names another document, or its job is gone) is logged and acknowledged; any
    other fault raises, so that the platform delivers the event again."""
    from shared.events import EventDecodeError, decode_document_event, path_params

    event_id = _event_id(event)
    with logs.scope():
        try:
            decoded = decode_document_event(event)
        except EventDecodeError as error:
            logs.warning(
                "Dropped an event that cannot be decoded", event_id=event_id, cause=str(error)
            )
            return
        params = path_params(document, decoded.path)
        if params is None:
            logs.warning(
                "Ignored an event for a document the trigger does not serve",
                event_id=event_id,
                document=decoded.path,
            )
            return
        try:
            process(worker, params, decoded.event_id)
        except JobGoneError:
            logs.warning(
                "Dropped an event whose document is gone", event_id=event_id, document=decoded.path
            )


def _event_id(event: Any) -> str:
    try:
        return str(event["id"])
    except (KeyError, TypeError):
        return ""
