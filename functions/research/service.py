"""Research operations behind the HTTP entry points. Raises `ApiError`, returns `Reply`."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from google.cloud import firestore

from functions.research import store
from functions.research.citations import references
from functions.research.documents import (
    Asker,
    Conversation,
    Evidence,
    EvidenceRef,
    FailureCode,
    Remembered,
    Run,
    RunStatus,
    Slot,
)
from functions.research.grants import asker_grant, still_granted
from functions.research.lifecycle import LIFECYCLE
from functions.research.requests import (
    AskRequest,
    CancelRequest,
    CitationsParams,
    ConversationCreateRequest,
    EvidenceItem,
    EvidenceReadRequest,
    EvidenceRemoveRequest,
    EvidenceUpsertRequest,
    StatusRequest,
)
from functions.research.views import (
    TERMINAL,
    availability,
    conversation_view,
    evidence_at,
    run_view,
    statements,
    status_view,
    support_check_view,
)
from shared import jobs, logs
from shared.auth import Principal
from shared.clients import db
from shared.config import Settings
from shared.errors import ApiError, ErrorCode, conflict, not_found
from shared.http import Call, Reply
from shared.ids import new_uuid
from shared.instance import settings
from shared.jsonbody import JsonObject
from shared.retention import expires_at, is_expired, utcnow
from shared.spend import NO_TOKENS
from shared.store import (
    Changes,
    Snapshot,
    as_stored,
    commit_if_unchanged,
    data_as,
    live_as,
    read_all,
    read_as,
    transact,
    unchanged_since,
    writable,
    write_if_unchanged,
)


def _live_conversation(snapshot: Snapshot) -> Conversation:
    return live_as(snapshot, Conversation, "The conversation")


def create_conversation(call: Call) -> Reply:
    body = call.body_as(ConversationCreateRequest)
    workspace_id = body["workspace_id"]
    now = utcnow()
    conversation_id = new_uuid()
    data: Conversation = {
        "workspace_id": workspace_id,
        "title": body.get("title"),
        "revision": 1,
        "evidence_revisions": {},
        "run_count": 0,
        "created_by": call.principal.user_id,
        "created_at": now,
        "expires_at": expires_at(now, settings().retention_hours),
    }
    store.conversation_ref(workspace_id, conversation_id).create(writable(data))
    return Reply(conversation_view(conversation_id, data), status=201)


def _upsert_plan(
    items: list[EvidenceItem], existing: dict[str, Evidence]
) -> tuple[list[EvidenceRef], dict[str, Evidence], bool]:
    """(response items, writes by evidence id, whether any text changed)."""
    answer: list[EvidenceRef] = []
    writes: dict[str, Evidence] = {}
    text_changed = False
    for item in items:
        evidence_id = item.get("evidence_id") or new_uuid()
        current = existing.get(evidence_id)
        source = item.get("source")
        if current is None:
            revision, text_changed = 1, True
            writes[evidence_id] = {"text": item["text"], "source": source, "revision": 1}
        elif current["text"] != item["text"]:
            revision, text_changed = current["revision"] + 1, True
            writes[evidence_id] = {"text": item["text"], "source": source, "revision": revision}
        else:
            revision = current["revision"]
            if "source" in item and current.get("source") != source:
                writes[evidence_id] = {**current, "source": source}
        answer.append({"evidence_id": evidence_id, "revision": revision})
    return answer, writes, text_changed


def _check_room(conversation: Conversation, added: list[str]) -> None:
    """Refuse new items past the conversation's limit, before anything is written."""
    limit = settings().research_max_evidence_items
    held = len(conversation["evidence_revisions"])
    if held + len(added) > limit:
        raise ApiError(
            ErrorCode.CONFLICT,
            f"The conversation holds {held} evidence items and may hold {limit}; "
            f"these {len(added)} new items would pass that. Remove items or start a new "
            "conversation.",
        )


def upsert_evidence(call: Call) -> Reply:
    body = call.body_as(EvidenceUpsertRequest)
    workspace_id, conversation_id = body["workspace_id"], body["conversation_id"]
    items = body["items"]
    named = [item["evidence_id"] for item in items if "evidence_id" in item]
    if len(named) != len(set(named)):
        raise ApiError(ErrorCode.INVALID_REQUEST, "An evidence_id appears twice in items.")
    conversation = store.conversation_ref(workspace_id, conversation_id)

    def apply(transaction: firestore.Transaction) -> Reply:
        refs = [conversation] + [
            store.evidence_ref(workspace_id, conversation_id, evidence_id) for evidence_id in named
        ]
        snapshots = read_all(refs, transaction)
        current = _live_conversation(snapshots[conversation.path])
        existing = {
            ref.id: found
            for ref in refs[1:]
            if (found := data_as(snapshots[ref.path], Evidence)) is not None
        }
        answer, writes, text_changed = _upsert_plan(items, existing)
        _check_room(current, [evidence_id for evidence_id in writes if evidence_id not in existing])
        revision = current["revision"] + (1 if text_changed else 0)
        now = utcnow()
        for evidence_id, data in writes.items():
            transaction.set(
                store.evidence_ref(workspace_id, conversation_id, evidence_id),
                {**data, "updated_at": now, "expires_at": current["expires_at"]},
            )
        if text_changed:
            revisions = {
                store.revision_field(evidence_id): data["revision"]
                for evidence_id, data in writes.items()
            }
            transaction.update(conversation, {"revision": revision, "updated_at": now, **revisions})
        return Reply({"items": answer, "conversation_revision": revision})

    return transact(apply)


def remove_evidence(call: Call) -> Reply:
    body = call.body_as(EvidenceRemoveRequest)
    workspace_id, conversation_id = body["workspace_id"], body["conversation_id"]
    evidence_ids = body["evidence_ids"]
    conversation = store.conversation_ref(workspace_id, conversation_id)

    def apply(transaction: firestore.Transaction) -> Reply:
        refs = [conversation] + [
            store.evidence_ref(workspace_id, conversation_id, evidence_id)
            for evidence_id in evidence_ids
        ]
        snapshots = read_all(refs, transaction)
        current = _live_conversation(snapshots[conversation.path])
        missing = [ref.id for ref in refs[1:] if not snapshots[ref.path].exists]
        if missing:
            raise not_found(f"Evidence {', '.join(missing)}")
        for ref in refs[1:]:
            transaction.delete(ref)
        revision = current["revision"] + 1
        removed = {store.revision_field(ref.id): firestore.DELETE_FIELD for ref in refs[1:]}
        transaction.update(conversation, {"revision": revision, "updated_at": utcnow(), **removed})
        return Reply({"conversation_revision": revision})

    return transact(apply)


def read_evidence(call: Call) -> Reply:
    """Each cited item as it was at the cited revision, so a person can check a statement
    against exactly what the model read: its text while the item still holds that
    revision; otherwise only that it was revised (only the current revision is kept) or
    removed. One batched read."""
    body = call.body_as(EvidenceReadRequest)
    workspace_id, conversation_id = body["workspace_id"], body["conversation_id"]
    conversation = store.conversation_ref(workspace_id, conversation_id)
    cited = body["items"]
    refs = {
        ref["evidence_id"]: store.evidence_ref(workspace_id, conversation_id, ref["evidence_id"])
        for ref in cited
    }
    snapshots = read_all([conversation, *refs.values()])
    _live_conversation(snapshots[conversation.path])
    now = utcnow()
    items = []
    for ref in cited:
        stored = data_as(snapshots[refs[ref["evidence_id"]].path], Evidence)
        items.append(evidence_at(ref, None if stored and is_expired(stored, now) else stored))
    return Reply({"items": items})


def _idempotency_hash(user_id: str, key: str) -> str:
    return hashlib.sha256(f"{user_id}\x00{key}".encode()).hexdigest()


def _request_hash(body: JsonObject) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


MAX_IDEMPOTENCY_KEY = 255
"""The longest Idempotency-Key accepted, in characters."""


def _idempotency_key(call: Call) -> str | None:
    key = call.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} printable characters.",
            issues=[{"path": ["Idempotency-Key"], "message": "Invalid header", "code": "custom"}],
        )
    return key


def _refusal(conversation: Conversation, budget_spent: bool, config: Settings) -> str | None:
    """Why a new run fails at once: its conversation is full, or the budget is spent."""
    if conversation["run_count"] >= config.research_max_runs_per_conversation:
        return FailureCode.CONVERSATION_FULL
    if budget_spent:
        return FailureCode.BUDGET_EXHAUSTED
    return None


@dataclass(frozen=True)
class Asked:
    """What an ask names, as its call carries it."""

    body: AskRequest
    body_hash: str
    asker: Asker
    keyed: bool
    """Whether it came with an Idempotency-Key, to be remembered with its run."""
    trace: str | None


@dataclass(frozen=True)
class Replay:
    """A key used before: the answer is that ask's run, read again."""

    run_id: str


@dataclass(frozen=True)
class AskPlan:
    """What a new ask writes: its run, the slot it takes while it waits or runs (None when
    it failed at once), the conversation's new run count and the remembered key."""

    run: Run
    slot: Slot | None
    run_count: int
    remembered: Remembered | None


def _new_run(
    asked: Asked, conversation: Conversation, budget_spent: bool, now: datetime, config: Settings
) -> Run:
    refusal = _refusal(conversation, budget_spent, config)
    run: Run = {
        "workspace_id": asked.body["workspace_id"],
        "conversation_id": asked.body["conversation_id"],
        "conversation_revision": conversation["revision"],
        "generation": conversation["run_count"] + 1,
        "request_kind": asked.body["request_kind"],
        "question": asked.body.get("question"),
        "status": RunStatus.QUEUED if refusal is None else RunStatus.FAILED,
        "failure_code": refusal,
        "created_at": now,
        "expires_at": expires_at(now, config.retention_hours),
        "lease_until": None,
        "model_id": None,
        "model_version": None,
        "asker": asked.asker,
        "message": None,
        "rejected": [],
        "usage": NO_TOKENS.copy(),
    }
    if asked.trace is not None:
        run["trace"] = asked.trace
    return run


def plan_ask(
    asked: Asked,
    conversation: Conversation,
    remembered: Remembered | None,
    budget_spent: bool,
    run_id: str,
    now: datetime,
    config: Settings,
) -> AskPlan | Replay:
    """An ask's decision from what it read: replay the key's run (a key used with another
    request is a conflict), or a new run, queued with a slot held until its queue
    deadline and lease have both passed, or failed at once and holding none."""
    if remembered is not None:
        if remembered["request_hash"] != asked.body_hash:
            raise conflict("This Idempotency-Key was used with a different request.")
        return Replay(remembered["run_id"])
    run = _new_run(asked, conversation, budget_spent, now, config)
    slot: Slot | None = None
    if run["status"] == RunStatus.QUEUED:
        until = jobs.queue_deadline(run) + timedelta(seconds=config.research_lease_seconds)
        slot = {"run_id": run_id, "until": until}
    kept: Remembered | None = (
        {"run_id": run_id, "request_hash": asked.body_hash, "expires_at": run["expires_at"]}
        if asked.keyed
        else None
    )
    return AskPlan(run, slot, conversation["run_count"] + 1, kept)


def _rate_limited() -> ApiError:
    return ApiError(
        ErrorCode.RATE_LIMITED,
        "This workspace has as many runs queued or processing as it may; retry later.",
        headers={"Retry-After": "30"},
    )


def _replay(workspace_id: str, run_id: str) -> Reply:
    """The answer an earlier ask with the same Idempotency-Key gave, read again."""
    run = live_as(store.run_ref(workspace_id, run_id).get(), Run, "The run")
    return _accepted(run_id, run, run["conversation_revision"])


def _accepted(run_id: str, run: Run, revision: int) -> Reply:
    return Reply({"run": run_view(run_id, run), "conversation_revision": revision}, status=202)


def _remembered(snapshot: Snapshot | None) -> Remembered | None:
    data = data_as(snapshot, Remembered) if snapshot is not None else None
    return data if data is not None and not is_expired(data) else None


def _unheld(slots: Iterable[Snapshot], now: datetime) -> list[Snapshot]:
    """Slots that are missing (released) or past their time."""
    return [s for s in slots if (slot := data_as(s, Slot)) is None or slot["until"] <= now]


def _free_slot(
    first: list[firestore.DocumentSnapshot[Any]],
    later: Iterable[list[firestore.DocumentReference]],
    now: datetime,
) -> firestore.DocumentSnapshot[Any] | None:
    """A slot no run holds, chosen at random so that concurrent asks rarely pick the same
    one; None when every slot is held. Every way a run ends releases its slot in the same
    commit, so a free one is usually among the first read; the later rounds are read one
    at a time until one holds a free slot."""
    free = _unheld(first, now)
    rounds = iter(later)
    while not free and (refs := next(rounds, None)) is not None:
        free = _unheld(read_all(refs).values(), now)
    return random.choice(free) if free else None  # noqa: S311 - spreading, not a secret


def ask(call: Call) -> Reply:
    """Queue a run. One batched read (conversation, Idempotency-Key, active-run slots, the
    ceilings of the workspace's token counters, the counters themselves only once those
    reach the budget) and one commit that holds only if none of what it changed changed
    since: the run, a free slot, the conversation's run count and the key. A replayed key
    is answered from reads alone; asks lost to a concurrent one read again."""
    body = call.body_as(AskRequest)
    workspace_id, conversation_id = body["workspace_id"], body["conversation_id"]
    key = _idempotency_key(call)
    key_ref = (
        store.idempotency_ref(workspace_id, _idempotency_hash(call.principal.user_id, key))
        if key
        else None
    )
    conversation = store.conversation_ref(workspace_id, conversation_id)
    config = settings()
    slots = store.slot_rounds(workspace_id, config.research_max_active_runs_per_workspace)
    first_slots = slots.first
    spend = store.spend(workspace_id)
    ceilings = spend.ceilings()
    budget = config.research_workspace_token_budget
    # Once the ceilings did not prove the budget unspent, planning again reads the shards
    # in its first read: asks racing on a new workspace, or near its budget, plan often.
    shards_too = False

    asked = Asked(
        body,
        _request_hash(call.body),
        {"user_id": call.principal.user_id, "token_id": call.principal.token_id},
        keyed=key_ref is not None,
        trace=logs.current_trace(),
    )

    def plan(batch: firestore.WriteBatch) -> Reply:
        nonlocal shards_too
        shards = spend.shards() if shards_too else []
        refs = [conversation, *([key_ref] if key_ref else []), *first_slots, ceilings, *shards]
        snapshots = read_all(refs)
        holder = snapshots[conversation.path]
        current = _live_conversation(holder)
        remembered = _remembered(snapshots[key_ref.path]) if key_ref else None
        now, run_id = utcnow(), new_uuid()
        shards_too = not spend.proven_unspent(snapshots[ceilings.path], budget)
        spent = spend.exhausted(snapshots, budget)
        decided = plan_ask(asked, current, remembered, spent, run_id, now, config)
        if isinstance(decided, Replay):
            return _replay(workspace_id, decided.run_id)
        run = decided.run
        if decided.slot is not None:
            slot = _free_slot([snapshots[r.path] for r in first_slots], slots.later(), now)
            if slot is None:
                raise _rate_limited()
            write_if_unchanged(batch, slot, writable(decided.slot))
            run["slot"] = slot.reference.id
        batch.create(store.run_ref(workspace_id, run_id), writable(run))
        batch.update(conversation, {"run_count": decided.run_count}, option=unchanged_since(holder))
        if key_ref is not None and decided.remembered is not None:
            write_if_unchanged(batch, snapshots[key_ref.path], writable(decided.remembered))
        return _accepted(run_id, run, current["revision"])

    reply = commit_if_unchanged(plan)
    logs.bind(run_id=reply.body["run"]["id"])
    return reply


def _run_in_conversation(conversation_id: str, snapshot: Snapshot) -> Run:
    data = data_as(snapshot, Run)
    if data is None or data["conversation_id"] != conversation_id:
        raise not_found("The run")
    return data


def status(call: Call) -> Reply:
    body = call.body_as(StatusRequest)
    workspace_id, conversation_id = body["workspace_id"], body["conversation_id"]
    run_ref = store.run_ref(workspace_id, body["run_id"])
    conversation = store.conversation_ref(workspace_id, conversation_id)
    snapshots = read_all([run_ref, conversation])
    run = _run_in_conversation(conversation_id, snapshots[run_ref.path])
    holder = snapshots[conversation.path]
    current = data_as(holder, Conversation)
    revision = current["revision"] if current else run["conversation_revision"]
    completed = run["status"] == RunStatus.COMPLETED
    lost = _why_not_current(run, current, call.principal) if completed else None
    return Reply(status_view(run_ref.id, run, revision, lost))


def citations(call: Call) -> Reply:
    """Each statement of a completed run with its verified passages, while the status read
    would serve the result (the same check of its sources and its asker's authority);
    otherwise none, and the status and availability say why. Two reads: the run, then
    its conversation."""
    params = call.params_as(CitationsParams)
    workspace_id, run_id = params["workspace_id"], params["runId"]
    run = live_as(store.run_ref(workspace_id, run_id).get(), Run, "The run")
    conversation = read_as(
        store.conversation_ref(workspace_id, run["conversation_id"]), Conversation
    )
    completed = run["status"] == RunStatus.COMPLETED
    lost = _why_not_current(run, conversation, call.principal) if completed else None
    view = run_view(run_id, run)
    status, failure = view["status"], view["failure_code"]
    if lost is not None:
        status, failure = RunStatus.UNAVAILABLE, lost
    served = status == RunStatus.COMPLETED
    return Reply(
        {
            "run_id": run_id,
            "status": status,
            "availability": availability(status, failure),
            "support_check": support_check_view(run) if served else None,
            "statements": statements(run.get("citations", [])) if served else [],
        }
    )


def _why_not_current(run: Run, conversation: Conversation | None, caller: Principal) -> str | None:
    """Why a completed result no longer stands, read without writing: its asker lost the
    right to ask, or a source it cites was removed or revised since. None while it stands.

    The conversation document keeps every item's revision, so the sources need no read of
    their own; the asker's token and membership are read once per AUTH_CACHE_SECONDS."""
    if not still_granted(db(), asker_grant(run), caller):
        return FailureCode.ACCESS_CHANGED
    message = run["message"]
    cited = [ref for _, ref in references(message["answer"])] if message else []
    held = (
        conversation["evidence_revisions"]
        if conversation is not None and not is_expired(conversation)
        else {}
    )
    if any(ref["evidence_id"] not in held for ref in cited):
        return FailureCode.SOURCE_UNAVAILABLE
    if any(held[ref["evidence_id"]] != ref["revision"] for ref in cited):
        return FailureCode.CONTEXT_CHANGED
    return None


def cancel(call: Call) -> Reply:
    body = call.body_as(CancelRequest)
    workspace_id = body["workspace_id"]
    run_ref = store.run_ref(workspace_id, body["run_id"])

    def apply(transaction: firestore.Transaction) -> Run:
        run = _run_in_conversation(body["conversation_id"], run_ref.get(transaction=transaction))
        shown = run_view(run_ref.id, run)
        if shown["status"] == RunStatus.CANCELLED:
            return run
        if shown["status"] in TERMINAL:
            raise conflict(f"The run is already {shown['status']} and cannot be cancelled.")
        changes: Changes = {
            "status": RunStatus.CANCELLED,
            "failure_code": FailureCode.CANCELLED,
            "cancelled_at": utcnow(),
        }
        store.release_slot(transaction, workspace_id, run_ref.id, run)
        transaction.update(run_ref, changes)
        return as_stored({**run, **changes}, Run)

    run = transact(apply)
    return Reply({"run": run_view(run_ref.id, run)})


def sweep(request_id: str) -> Reply:
    """Settle runs stuck past their lease or queue deadline (Cloud Scheduler's job)."""
    ended = jobs.sweep(LIFECYCLE, jobs.SWEEP_BATCH)
    logs.info("Sweep settled stuck runs", request_id=request_id, ended=len(ended))
    return Reply({"ended": len(ended), "runs": ended})
