"""Where research data lives in Firestore.

workspaces/{ws}                                   tenant; `tokens_used` counts Gemini tokens
workspaces/{ws}/conversations/{c}                 title, revision, run_count, expires_at
workspaces/{ws}/conversations/{c}/evidence/{e}    text, source, revision
workspaces/{ws}/runs/{r}                          one run; the assistant message lives in it
workspaces/{ws}/idempotency/{sha256(user, key)}   the run an Idempotency-Key created
"""

from __future__ import annotations

from google.cloud import firestore

from shared.clients import db

WORKSPACES = "workspaces"


def workspace_ref(workspace_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = db().collection(WORKSPACES).document(workspace_id)
    return ref


def conversation_ref(workspace_id: str, conversation_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        workspace_ref(workspace_id).collection("conversations").document(conversation_id)
    )
    return ref


def evidence_collection(workspace_id: str, conversation_id: str) -> firestore.CollectionReference:
    ref: firestore.CollectionReference = conversation_ref(workspace_id, conversation_id).collection(
        "evidence"
    )
    return ref


def evidence_ref(
    workspace_id: str, conversation_id: str, evidence_id: str
) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = evidence_collection(workspace_id, conversation_id).document(
        evidence_id
    )
    return ref


def runs(workspace_id: str) -> firestore.CollectionReference:
    ref: firestore.CollectionReference = workspace_ref(workspace_id).collection("runs")
    return ref


def run_ref(workspace_id: str, run_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = runs(workspace_id).document(run_id)
    return ref


def idempotency_ref(workspace_id: str, key_hash: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        workspace_ref(workspace_id).collection("idempotency").document(key_hash)
    )
    return ref
