"""Where the Psychologist's data lives in Firestore.

projects/{p}                                  tenant
projects/{p}/sessions/{s}                     state, agents, counts, first/last event time
projects/{p}/sessions/{s}/event_index/head   the session's packed event index: a hash of each
                                              event's id and body (idempotency) and its place
                                              in a chunk (audit reads), see event_index.py
projects/{p}/sessions/{s}/event_index/{n}     a sealed generation of that index
projects/{p}/sessions/{s}/event_chunks/{c}    a batch's events as one JSON array: the only copy
projects/{p}/usage/{k}                        `tokens_used`: Gemini tokens (shared.spend)
projects/{p}/analyses/{a}                     one analysis (its creation runs the worker)
projects/{p}/hypotheses/{h}                   a stored hypothesis, with copies of its events
projects/{p}/hypotheses/{h}/decisions/{d}     the decision history, append-only
projects/{p}/outcomes/{s}-{a}                 an ended session's outcome for one agent
                                              (functions/loop/store.py)
projects/{p}/summaries/{s}                    an ended session's summary: its task, ending and
                                              main failure, or why it has none
"""

from __future__ import annotations

from google.cloud import firestore

# A trial names its hypothesis by this path too: defined in the loop, named here.
from functions.loop.subjects import hypotheses as hypotheses  # noqa: PLC0414
from shared.spend import Spend
from shared.store import collection, document

PROJECTS = "projects"
ANALYSES = "analyses"
SUMMARIES = "summaries"


def session_ref(project_id: str, session_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, "sessions", session_id)


def index_head(project_id: str, session_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, "sessions", session_id, "event_index", "head")


def index_generation(
    project_id: str, session_id: str, generation_id: str
) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, "sessions", session_id, "event_index", generation_id)


def event_chunks(project_id: str, session_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, "sessions", session_id, "event_chunks")


def analysis_ref(project_id: str, analysis_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, ANALYSES, analysis_id)


def summaries(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, SUMMARIES)


def summary_ref(project_id: str, session_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, SUMMARIES, session_id)


def spend(project_id: str) -> Spend:
    """The project's Gemini tokens, counted against `PSYCHOLOGIST_PROJECT_TOKEN_BUDGET`."""
    return Spend(document(PROJECTS, project_id))
