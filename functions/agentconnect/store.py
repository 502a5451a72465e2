"""Where AgentConnect's data lives in Firestore.

orgs/{o}                                           tenant
orgs/{o}/agents/{a}                                selection_version, last_seq
orgs/{o}/agents/{a}/selections/{version}           immutable selection versions
orgs/{o}/agents/{a}/agent_sessions/{s}             a started session (its creation runs the worker)
orgs/{o}/agents/{a}/evaluations/{seq}              the frozen summary, kept
orgs/{o}/agents/{a}/evaluation_details/{seq}       the details, expiring after 24 h (TTL)
"""

from __future__ import annotations

from google.cloud import firestore

from shared.clients import db

EVALUATIONS = "evaluations"


def agent_ref(org_id: str, agent_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        db().collection("orgs").document(org_id).collection("agents").document(agent_id)
    )
    return ref


def selection_ref(org_id: str, agent_id: str, version: int) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        agent_ref(org_id, agent_id).collection("selections").document(str(version))
    )
    return ref


def session_ref(org_id: str, agent_id: str, session_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        agent_ref(org_id, agent_id).collection("agent_sessions").document(session_id)
    )
    return ref


def evaluations(org_id: str, agent_id: str) -> firestore.CollectionReference:
    ref: firestore.CollectionReference = agent_ref(org_id, agent_id).collection(EVALUATIONS)
    return ref


def evaluation_ref(org_id: str, agent_id: str, seq: int) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = evaluations(org_id, agent_id).document(str(seq))
    return ref


def details_ref(org_id: str, agent_id: str, seq: int) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        agent_ref(org_id, agent_id).collection("evaluation_details").document(str(seq))
    )
    return ref
