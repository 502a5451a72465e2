"""The research run worker: claim once, ask Gemini, check, and settle in one transaction.

At-least-once delivery is safe: the claim moves a run `queued` → `processing` in a
transaction, so a second delivery finds it claimed and does nothing. A run whose worker
died is settled by the next delivery once its lease has passed (and reads already show
it failed). Nothing here writes into the run's path from a create event of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions.research import store
from functions.research.checks import cited_ids, gemini_answer_schema, rejections
from functions.research.prompts import build_prompt
from functions.research.views import effective_state
from shared import logs
from shared.auth import Grant
from shared.clients import db
from shared.config import settings
from shared.events import DocumentEvent
from shared.gemini import GeminiError, Usage, estimate_tokens, generate_json
from shared.ids import new_uuid
from shared.retention import is_expired, utcnow

RUN_PATH = re.compile(r"^workspaces/(?P<workspace>[^/]+)/runs/(?P<run>[^/]+)$")


@dataclass
class Outcome:
    answer: dict[str, Any] | None = None
    failure: str | None = None
    usage: Usage = field(default_factory=lambda: Usage(0, 0))
    model_version: str | None = None
    rejected: list[dict[str, str]] = field(default_factory=list)


def _grant(run: dict[str, Any]) -> Grant:
    return Grant(
        token_id=run["asker"]["token_id"],
        user_id=run["asker"]["user_id"],
        capability="agent:research",
        kind="workspace",
        tenant_id=run["workspace_id"],
        role="member",
    )


def _failed(code: str) -> dict[str, Any]:
    return {"status": "failed", "failure_code": code, "lease_until": None, "finished_at": utcnow()}


def claim(workspace_id: str, run_id: str) -> dict[str, Any] | None:
    """Move a queued run to processing; None when there is nothing (more) to do."""
    run_ref = store.run_ref(workspace_id, run_id)

    @firestore.transactional
    def apply(transaction: firestore.Transaction) -> dict[str, Any] | None:
        snapshot = run_ref.get(transaction=transaction)
        run = snapshot.to_dict() if snapshot.exists else None
        if run is None or run["status"] not in ("queued", "processing"):
            return None
        status, failure = effective_state(run)
        if status != run["status"]:
            transaction.update(run_ref, _failed(failure or "generation_unconfirmed"))
            return None
        if status != "queued":
            return None
        conversation_ref = store.conversation_ref(workspace_id, run["conversation_id"])
        conversation = conversation_ref.get(transaction=transaction).to_dict()
        if conversation is None or is_expired(conversation):
            transaction.update(run_ref, _failed("source_unavailable"))
            return None
        changes = {
            "status": "processing",
            "conversation_revision": conversation["revision"],
            "model_id": settings().gemini_model,
            "lease_until": utcnow() + timedelta(seconds=settings().research_lease_seconds),
            "started_at": utcnow(),
        }
        transaction.update(run_ref, changes)
        return {**run, **changes}

    claimed: dict[str, Any] | None = apply(db().transaction())
    return claimed


def _preflight(run: dict[str, Any]) -> str | None:
    """Why the run cannot start (access, budget), read in one round trip; None when it can."""
    client = db()
    grant = _grant(run)
    workspace = store.workspace_ref(run["workspace_id"])
    snapshots = {s.reference.path: s for s in client.get_all([*grant.refs(client), workspace])}
    if not grant.holds(snapshots, client):
        return "access_changed"
    used = (snapshots[workspace.path].to_dict() or {}).get("tokens_used", 0)
    if used >= settings().research_workspace_token_budget:
        return "budget_exhausted"
    return None


def _evidence(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    collection = store.evidence_collection(run["workspace_id"], run["conversation_id"])
    return {snapshot.id: snapshot.to_dict() or {} for snapshot in collection.stream()}


def produce(run: dict[str, Any]) -> Outcome:
    config = settings()
    if not config.gemini_configured:
        return Outcome(failure="not_configured")
    refusal = _preflight(run)
    if refusal:
        return Outcome(failure=refusal)
    evidence = _evidence(run)
    if not evidence:
        return Outcome(failure="source_unavailable")
    prompt = build_prompt(run["request_kind"], run.get("question"), evidence)
    if estimate_tokens(prompt.system + prompt.text) > config.research_input_token_budget:
        return Outcome(failure="input_too_large")
    try:
        reply = generate_json(
            system=prompt.system,
            prompt=prompt.text,
            schema=gemini_answer_schema(),
            max_output_tokens=config.research_output_token_limit,
        )
    except GeminiError as failure:
        return Outcome(
            failure=failure.kind.value,
            usage=failure.usage,
            rejected=[{"path": "$", "reason": failure.detail}],
        )
    found = rejections(reply.data, run["request_kind"], prompt.cited_revisions)
    if found:
        return Outcome(
            failure="invalid_output",
            usage=reply.usage,
            model_version=reply.model_version,
            rejected=found,
        )
    return Outcome(answer=reply.data, usage=reply.usage, model_version=reply.model_version)


def _settlement(
    run: dict[str, Any],
    snapshots: dict[str, firestore.DocumentSnapshot[Any]],
    cited: list[firestore.DocumentReference],
    conversation_path: str,
) -> str | None:
    """The failure code that must replace a good answer at completion, if any."""
    client = db()
    if not _grant(run).holds(snapshots, client):
        return "access_changed"
    if any(not snapshots[ref.path].exists for ref in cited):
        return "source_unavailable"
    conversation = snapshots[conversation_path]
    if (
        not conversation.exists
        or (conversation.to_dict() or {})["revision"] != run["conversation_revision"]
    ):
        return "context_changed"
    return None


def finish(run: dict[str, Any], outcome: Outcome) -> str:
    """Write the result or failure and count tokens, in one transaction. Returns the status."""
    client = db()
    workspace_id, run_id = run["workspace_id"], run["id"]
    run_ref = store.run_ref(workspace_id, run_id)
    conversation_ref = store.conversation_ref(workspace_id, run["conversation_id"])
    cited_evidence = sorted(cited_ids(outcome.answer)) if outcome.answer else []
    cited = [store.evidence_ref(workspace_id, run["conversation_id"], e) for e in cited_evidence]
    grant_refs = _grant(run).refs(client) if outcome.answer else []

    @firestore.transactional
    def apply(transaction: firestore.Transaction) -> str:
        refs = [run_ref, conversation_ref, *grant_refs, *cited]
        snapshots = {s.reference.path: s for s in client.get_all(refs, transaction=transaction)}
        current = snapshots[run_ref.path].to_dict() if snapshots[run_ref.path].exists else None
        if outcome.usage.total:
            transaction.set(
                store.workspace_ref(workspace_id),
                {"tokens_used": firestore.Increment(outcome.usage.total)},
                merge=True,
            )
        if current is None or current["status"] != "processing":
            return current["status"] if current else "missing"
        usage = {
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
        }
        common = {
            "usage": usage,
            "model_version": outcome.model_version,
            "rejected": outcome.rejected,
        }
        failure = "expired" if is_expired(current) else outcome.failure
        if failure is None:
            failure = _settlement(run, snapshots, cited, conversation_ref.path)
        if failure is not None:
            transaction.update(run_ref, {**common, **_failed(failure)})
            return "failed"
        message = {
            "id": new_uuid(),
            "run_id": run_id,
            "question": run.get("question"),
            "answer": outcome.answer,
            "created_at": utcnow(),
        }
        transaction.update(
            run_ref,
            {
                **common,
                "status": "completed",
                "lease_until": None,
                "finished_at": utcnow(),
                "message": message,
            },
        )
        return "completed"

    result: str = apply(client.transaction())
    return result


def process(event: DocumentEvent) -> None:
    match = RUN_PATH.match(event.path)
    if match is None:
        logs.warning("Ignored an event for a document that is not a run", document=event.path)
        return
    workspace_id, run_id = match.group("workspace"), match.group("run")
    run = claim(workspace_id, run_id)
    if run is None:
        logs.info("Run already claimed or settled", run_id=run_id, event_id=event.event_id)
        return
    run["id"] = run_id
    outcome = produce(run)
    status = finish(run, outcome)
    logs.info(
        "Run settled",
        run_id=run_id,
        workspace_id=workspace_id,
        status=status,
        failure_code=outcome.failure,
        input_tokens=outcome.usage.input_tokens,
        output_tokens=outcome.usage.output_tokens,
        rejected=len(outcome.rejected),
    )
