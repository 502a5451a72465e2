"""Where research data lives in Firestore.

workspaces/{ws}                                   `tokens_used` (Gemini tokens), `active_runs`
workspaces/{ws}/conversations/{c}                 title, revision, run_count, expires_at
workspaces/{ws}/conversations/{c}/evidence/{e}    text, source, revision
workspaces/{ws}/runs/{r}                          one run; the assistant message lives in it
workspaces/{ws}/idempotency/{sha256(user, key)}   the run an Idempotency-Key created
"""

from __future__ import annotations

from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1.field_path import FieldPath

from shared.store import collection, document

RUNS = "runs"

WORKSPACES = "workspaces"


def workspace_ref(workspace_id: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id)


def conversation_ref(workspace_id: str, conversation_id: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, "conversations", conversation_id)


def evidence_collection(workspace_id: str, conversation_id: str) -> firestore.CollectionReference:
    conversation = conversation_ref(workspace_id, conversation_id)
    found: firestore.CollectionReference = conversation.collection("evidence")
    return found


def evidence_ref(
    workspace_id: str, conversation_id: str, evidence_id: str
) -> firestore.DocumentReference:
    found: firestore.DocumentReference = evidence_collection(
        workspace_id, conversation_id
    ).document(evidence_id)
    return found


def runs(workspace_id: str) -> firestore.CollectionReference:
    return collection(WORKSPACES, workspace_id, RUNS)


def run_ref(workspace_id: str, run_id: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, RUNS, run_id)


def idempotency_ref(workspace_id: str, key_hash: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, "idempotency", key_hash)


EVIDENCE_REVISIONS = "evidence_revisions"
"""On the conversation document: {evidence id: revision} of every item it holds, kept in
the transactions that change evidence, so that a status read checks currency at once."""


def revision_field(evidence_id: str) -> str:
    """The field path of one item's revision, for `update` (ids hold `-`, so quoted)."""
    return FieldPath(EVIDENCE_REVISIONS, evidence_id).to_api_repr()


ACTIVE_RUNS = "active_runs"
"""On the workspace document: {run id: when its slot frees itself}, one entry per run
queued or processing. Asks check and fill it in the transaction that creates the run."""


def update_workspace(
    transaction: firestore.Transaction,
    workspace_id: str,
    *,
    tokens: int = 0,
    release: str | None = None,
) -> None:
    """Count Gemini tokens and free a run's slot, in one write of the workspace document."""
    changes: dict[str, Any] = {}
    if tokens:
        changes["tokens_used"] = firestore.Increment(tokens)
    if release is not None:
        changes[ACTIVE_RUNS] = {release: firestore.DELETE_FIELD}
    if changes:
        transaction.set(workspace_ref(workspace_id), changes, merge=True)
