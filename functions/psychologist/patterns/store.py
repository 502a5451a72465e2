"""Where patterns live in Firestore, beside the Psychologist's data (`psychologist/store.py`).

projects/{p}/patterns/{id}             one pattern of one agent: its label, centroid and
                                       radius, counts as of its last refresh or join
projects/{p}/pattern_refreshes/{id}    one refresh (its creation runs the worker)
projects/{p}/summaries/{s}             (the Psychologist's) a summary carries `embedding`,
                                       `pattern_id`, `distance` and `joined_at` once grouped
"""

from __future__ import annotations

from google.cloud import firestore

# A pattern's path and its resolved status are the loop's too (it resolves a pattern whose
# trial reads improved): defined there, named here with the rest of the map.
from functions.loop.subjects import RESOLVED as RESOLVED  # noqa: PLC0414
from functions.loop.subjects import pattern_ref as pattern_ref  # noqa: PLC0414
from functions.loop.subjects import patterns as patterns  # noqa: PLC0414
from shared.store import collection, document

PROJECTS = "projects"
REFRESHES = "pattern_refreshes"


def refresh_ref(project_id: str, refresh_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, REFRESHES, refresh_id)


def refreshes(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, REFRESHES)
