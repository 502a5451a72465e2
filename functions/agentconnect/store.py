"""Where AgentConnect's data lives in Firestore.

orgs/{o}                                           tenant
orgs/{o}/usage/{k}                                 `tokens_used`: Gemini tokens (shared.spend)
orgs/{o}/agents/{a}                                selection_version, last_seq, instructions
orgs/{o}/agents/{a}/selections/{version}           immutable selection versions
orgs/{o}/agents/{a}/instructions/{version}         immutable instructions versions (outcomes)
orgs/{o}/agents/{a}/agent_sessions/{s}             a started session (its creation runs the worker)
orgs/{o}/agents/{a}/evaluations/{seq}              the frozen summary, kept
orgs/{o}/agents/{a}/evaluation_details/{seq}       the details, expiring after 24 h (TTL)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.cloud import firestore

from shared.budgets import stored_size
from shared.spend import Spend
from shared.store import collection, document

EVALUATIONS = "evaluations"
DOCUMENT_LIMIT = 1_048_576
"""Production Firestore's largest document, in bytes by its storage-size formula."""


def stored_bytes(ref: firestore.DocumentReference, fields: Mapping[str, Any]) -> int:
    """A document's size by Firestore's storage-size formula: its name (each segment a
    string, plus 16), its fields, and 32."""
    return stored_size(ref.path.split("/")) + 16 + stored_size(fields) + 32


def agent_ref(org_id: str, agent_id: str) -> firestore.DocumentReference:
    return document("orgs", org_id, "agents", agent_id)


def selections(org_id: str, agent_id: str) -> firestore.CollectionReference:
    return collection("orgs", org_id, "agents", agent_id, "selections")


def selection_ref(org_id: str, agent_id: str, version: int) -> firestore.DocumentReference:
    return document("orgs", org_id, "agents", agent_id, "selections", str(version))


def session_ref(org_id: str, agent_id: str, session_id: str) -> firestore.DocumentReference:
    return document("orgs", org_id, "agents", agent_id, "agent_sessions", session_id)


def evaluations(org_id: str, agent_id: str) -> firestore.CollectionReference:
    return collection("orgs", org_id, "agents", agent_id, EVALUATIONS)


def evaluation_ref(org_id: str, agent_id: str, seq: int) -> firestore.DocumentReference:
    return document("orgs", org_id, "agents", agent_id, EVALUATIONS, str(seq))


def details_ref(org_id: str, agent_id: str, seq: int) -> firestore.DocumentReference:
    return document("orgs", org_id, "agents", agent_id, "evaluation_details", str(seq))


def spend(org_id: str) -> Spend:
    """The org's Gemini tokens, counted against `AGENTCONNECT_ORG_TOKEN_BUDGET`."""
    return Spend(document("orgs", org_id))


def spend_of(evaluation: firestore.DocumentReference) -> Spend:
    """The spend of the org an evaluation belongs to."""
    return spend(evaluation.path.split("/")[1])
