"""Where patterns live in Firestore, beside the Psychologist's data (`psychologist/store.py`).

projects/{p}/patterns/{id}             one pattern of one agent: its label, centroid and
                                       radius, counts as of its last refresh or join
projects/{p}/pattern_refreshes/{id}    one refresh (its creation runs the worker)
projects/{p}/summaries/{s}             (the Psychologist's) a summary carries `embedding`,
                                       `pattern_id`, `distance` and `joined_at` once grouped
"""

from __future__ import annotations

from google.cloud import firestore

from shared.store import collection, document

PROJECTS = "projects"
RESOLVED = "resolved"
"""A pattern's status once a randomised trial of its suggestion read `improved`."""
REFRESHES = "pattern_refreshes"


def patterns(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, "patterns")


def pattern_ref(project_id: str, pattern_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, "patterns", pattern_id)


def refresh_ref(project_id: str, refresh_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, REFRESHES, refresh_id)


def refreshes(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, REFRESHES)
