"""Where the Psychologist's data lives in Firestore.

projects/{p}                                  tenant
projects/{p}/sessions/{s}                     state, agents, counts, first/last event time
projects/{p}/sessions/{s}/events/{eventId}    one event as sent: for idempotency and audit
projects/{p}/sessions/{s}/event_chunks/{c}    the same events as JSON arrays, for analysis
projects/{p}/analyses/{a}                     one analysis (its creation runs the worker)
projects/{p}/hypotheses/{h}                   a stored hypothesis, with copies of its events
projects/{p}/hypotheses/{h}/decisions/{d}     the decision history, append-only
"""

from __future__ import annotations

from google.cloud import firestore

from shared.clients import db

ANALYSES = "analyses"


def project_ref(project_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = db().collection("projects").document(project_id)
    return ref


def session_ref(project_id: str, session_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        project_ref(project_id).collection("sessions").document(session_id)
    )
    return ref


def events(project_id: str, session_id: str) -> firestore.CollectionReference:
    ref: firestore.CollectionReference = session_ref(project_id, session_id).collection("events")
    return ref


def event_chunks(project_id: str, session_id: str) -> firestore.CollectionReference:
    ref: firestore.CollectionReference = session_ref(project_id, session_id).collection(
        "event_chunks"
    )
    return ref


def analysis_ref(project_id: str, analysis_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        project_ref(project_id).collection(ANALYSES).document(analysis_id)
    )
    return ref


def hypotheses(project_id: str) -> firestore.CollectionReference:
    ref: firestore.CollectionReference = project_ref(project_id).collection("hypotheses")
    return ref
