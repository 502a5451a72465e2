"""What the loop knows of what a trial tries: an accepted hypothesis or pattern of the
Psychologist, each a document of its project. While a trial runs, its subject names it
(`running_trial`, so that only one runs at a time); a pattern whose trial reads `improved`
is resolved by it. The Psychologist owns these documents; the loop touches only the fields
named here.

projects/{p}/hypotheses/{h}   a hypothesis (its latest trial: `last_trial`)
projects/{p}/patterns/{id}    a pattern (its latest trial: `trial_id`)"""

from __future__ import annotations

from google.cloud import firestore

from functions.loop.documents import Trial
from shared.store import collection, document

PROJECTS = "projects"
RUNNING = "running_trial"
"""The subject's field naming its running trial."""
RESOLVED = "resolved"
"""A pattern's status once a randomised trial of its suggestion read `improved`."""


def hypotheses(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, "hypotheses")


def patterns(project_id: str) -> firestore.CollectionReference:
    return collection(PROJECTS, project_id, "patterns")


def pattern_ref(project_id: str, pattern_id: str) -> firestore.DocumentReference:
    return document(PROJECTS, project_id, "patterns", pattern_id)


def subject_ref(trial: Trial) -> firestore.DocumentReference:
    """The hypothesis or pattern the trial tries."""
    pattern_id = trial.get("pattern_id")
    if pattern_id:
        return pattern_ref(trial["project_id"], pattern_id)
    return hypotheses(trial["project_id"]).document(trial["hypothesis_id"] or "")


def resolved_by(trial: Trial, verdict: str) -> dict[str, str]:
    """A pattern's changes when its trial reads `improved`: resolved by a randomised
    result, and only by one."""
    if trial.get("pattern_id") and verdict == "improved":
        return {"status": RESOLVED, "resolved_by": trial["id"]}
    return {}
