"""Where the Psychologist's data lives in Firestore.

projects/{p}                                  tenant
projects/{p}/sessions/{s}                     state, agents, counts, first/last event time
projects/{p}/sessions/{s}/events/{eventId}    an event's hash (idempotency) and its place in
                                              a chunk (audit reads), not the event itself
projects/{p}/sessions/{s}/event_chunks/{c}    a batch's events as one JSON array: the only copy
projects/{p}/analyses/{a}                     one analysis (its creation runs the worker)
projects/{p}/hypotheses/{h}                   a stored hypothesis, with copies of its events
projects/{p}/hypotheses/{h}/decisions/{d}     the decision history, append-only
"""

from __future__ import annotations

from google.cloud import firestore

from shared.store import collection, document

PROJECTS = "projects"
ANALYSES = "analyses"


def project_ref(project_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id)


def session_ref(project_id: str, session_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, "sessions", session_id)


def events(project_id: str, session_id: str) -> firestore.CollectionReference:
    found: firestore.CollectionReference = session_ref(project_id, session_id).collection("events")
    return found


def event_chunks(project_id: str, session_id: str) -> firestore.CollectionReference:
    session = session_ref(project_id, session_id)
    found: firestore.CollectionReference = session.collection("event_chunks")
    return found


def analysis_ref(project_id: str, analysis_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, ANALYSES, analysis_id)


def hypotheses(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, "hypotheses")
