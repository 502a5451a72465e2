"""Analyses waiting on a Gemini batch (an abnormal end's chunk calls, or a normal end's
summary call): the sweep asks Gemini where each stands and resumes the ones whose batch
has ended.

A batch that succeeded is finished from its answers with the same checks and settling
as a standard call's; one that failed, was cancelled or expired, one with a request that
failed in it, and one still running past `PSYCHOLOGIST_BATCH_DEADLINE_S` (cancelled then)
is asked the standard way instead, and the analysis says why. Resuming takes a new
claim in a transaction, so two sweeps never finish one analysis twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.loop import trials
from functions.psychologist import store, worker
from functions.psychologist.documents import Analysis, AnalysisStatus, BatchRecord
from functions.psychologist.lifecycle import LIFECYCLE
from functions.psychologist.patterns import joins, schedule
from functions.psychologist.patterns import lifecycle as patterns
from functions.psychologist.telemetry import endings
from shared import jobs, logs
from shared.clients import db
from shared.codes import ProviderFailure
from shared.gemini import BatchStatus, GeminiError, JsonAnswer, batch_status, cancel_batch
from shared.http import Reply
from shared.ids import new_ulid
from shared.instance import settings
from shared.jobs import Claim
from shared.retention import utcnow
from shared.store import PRECONDITION_LOST, Snapshot, data_as, read_as, transact, unchanged_since

BATCH_POLLS = 50
"""How many waiting analyses one sweep asks Gemini about."""
LONGEST_POLL_GAP = timedelta(minutes=10)


def sweep(request_id: str) -> Reply:
    """Cloud Scheduler's minute: end silent sessions, settle stuck analyses, resume the
    analyses whose batch has ended, join new sessions to patterns, and act on what the
    running trials read (the guardrail, `autoAdopt`). It runs apart from the public
    operations' modules, which never load the Gemini client."""
    sessions, settled = endings.sweep_stale()
    resumed = poll_batches()
    refreshes = jobs.sweep(patterns.LIFECYCLE, jobs.SWEEP_BATCH)
    joined, queued = join_patterns(utcnow())
    trials_acted = trials.watch()
    logs.info(
        "Sweep ended silent sessions and stuck analyses",
        request_id=request_id,
        ended=len(sessions),
        analyses=len(settled),
        batches=len(resumed),
        joined=len(joined),
        refreshes=len(queued),
        trials=len(trials_acted),
    )
    return Reply(
        {
            "ended": len(sessions),
            "sessions": sessions,
            "analyses": settled,
            "batches": resumed,
            "stuckRefreshes": refreshes,
            "joined": joined,
            "refreshes": queued,
            "trials": trials_acted,
        }
    )


def join_patterns(now: datetime) -> tuple[list[str], list[str]]:
    """New summaries joined to their nearest patterns, and the refreshes queued for the
    projects they came from. Gemini failing here ends nothing: the next refresh embeds and
    groups what this sweep could not."""
    try:
        joined, projects = joins.join_new(now)
    except GeminiError as error:
        logs.warning("The sweep could not join new sessions to patterns", cause=error.detail)
        return [], []
    return joined, schedule.schedule(projects, now)


def poll_batches() -> list[str]:
    """Ask about every analysis whose next poll is due (up to `BATCH_POLLS`); the paths
    of those resumed."""
    now = utcnow()
    due = (
        db()
        .collection_group(store.ANALYSES)
        .where(filter=FieldFilter("status", "==", AnalysisStatus.PROCESSING))
        .where(filter=FieldFilter("batch_poll_at", "<=", now))
        .limit(BATCH_POLLS)
    )
    return [s.reference.path for s in due.stream() if poll(s.reference)]


def poll(ref: firestore.DocumentReference) -> bool:
    """Resume the analysis if its batch ended (or its deadline passed), else poll later;
    True when it was resumed."""
    snapshot = ref.get()
    analysis = data_as(snapshot, Analysis)
    if analysis is None or "batch_poll_at" not in analysis or "batch" not in analysis:
        return False
    logs.bind(analysis_id=ref.id, trace=analysis.get("trace"))
    batch = analysis["batch"]
    name, deadline = batch["name"], batch["deadline_at"]
    if name is None or deadline is None:
        return False
    now = utcnow()
    fallback: str | None = None
    try:
        status: BatchStatus | None = batch_status(name, worker.asked_for(analysis).output)
    except GeminiError as error:
        if now < deadline:
            logs.warning("A batch could not be read; asking again later", cause=error.detail)
            _poll_later(snapshot, batch, batch["state"], now)
            return False
        status, fallback = None, error.detail
    if status is not None:
        if status.waiting and now < deadline:
            _poll_later(snapshot, batch, status.state, now)
            return False
        fallback = _why_standard(status, name)
    answers = status.answers if status is not None and fallback is None else None
    state = status.state if status is not None else batch["state"]
    if status is not None and status.waiting:
        state = "cancelled"
    record: BatchRecord = {
        **batch,
        "state": state,
        "fallback": f"{fallback}; asked the standard way" if fallback else None,
    }
    claimed = _reclaim(ref, name, record)
    if claimed is None:
        return False
    _resume(claimed, record, answers)
    return True


def _why_standard(status: BatchStatus, name: str) -> str | None:
    """Why the analysis is asked the standard way after its batch; None to use its answers."""
    if status.waiting:
        try:
            cancel_batch(name)
        except GeminiError as error:
            logs.warning("A batch past its deadline could not be cancelled", cause=error.detail)
        deadline_s = settings().psychologist_batch_deadline_s
        return f"the batch had not finished {deadline_s} s after it was submitted; cancelled it"
    if status.detail is not None:
        return status.detail
    for index, answer in enumerate(status.answers, start=1):
        if isinstance(answer, GeminiError) and answer.kind == ProviderFailure.PROVIDER_UNAVAILABLE:
            return f"request {index} of {len(status.answers)} {answer.detail}"
    return None


def _poll_later(snapshot: Snapshot, batch: BatchRecord, state: str, now: datetime) -> None:
    """Ask again after a quarter of the time it has waited (at most ten minutes), so a
    batch that takes hours costs a few dozen polls; lost to a concurrent change, it is
    left to whoever made that change."""
    submitted = batch["submitted_at"] or now
    gap = min((now - submitted) / 4, LONGEST_POLL_GAP)
    try:
        snapshot.reference.update(
            {"batch.state": state, "batch_poll_at": now + gap}, option=unchanged_since(snapshot)
        )
    except PRECONDITION_LOST:
        return


def _reclaim(ref: firestore.DocumentReference, name: str, record: BatchRecord) -> Claim | None:
    """Take the analysis back from its batch under a new claim and lease; None when
    another sweep did, or it is no longer waiting."""

    def apply(transaction: firestore.Transaction) -> Claim | None:
        current = read_as(ref, Analysis, transaction)
        if (
            current is None
            or current["status"] != AnalysisStatus.PROCESSING
            or "batch_poll_at" not in current
            or current.get("batch", {}).get("name") != name
        ):
            return None
        now = utcnow()
        claim_id, lease_until = new_ulid(), now + LIFECYCLE.lease()
        transaction.update(
            ref,
            {
                "batch": record,
                "batch_poll_at": firestore.DELETE_FIELD,
                "claim": claim_id,
                "lease_until": lease_until,
            },
        )
        taken = {**current, "batch": record, "claim": claim_id, "lease_until": lease_until}
        taken.pop("batch_poll_at", None)
        return Claim(ref, claim_id, taken, lease_until, LIFECYCLE)

    return transact(apply)


def _resume(
    claimed: Claim, record: BatchRecord, answers: list[JsonAnswer | GeminiError] | None
) -> None:
    """Finish the analysis from the batch's answers, or the standard way, and settle it."""
    work = worker.AnalysisWork(batch=record, batch_answers=answers)
    done = jobs.run(
        claimed,
        lambda started: worker.produce(started, work),
        lambda code, error: worker.failed(claimed, work, code, error),
    )
    worker.log(claimed, done, worker.finish(claimed, done))
