"""The outcome record's three merges, its only writers: how the session ended (the
Psychologist's analysis or its count of a normal end), the choice frozen at its start
(AgentConnect), and the pattern its summary joined (the Psychologist's patterns). Each
lands on its own, in either order, at `store.outcome_ref`, and carries the record's
expiry, so a record missing one half is not left behind forever."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from google.cloud import firestore

from functions.loop import store
from functions.loop.documents import ChoiceRecord, Outcome
from shared.store import Changes, writable


class Merge(NamedTuple):
    """One merge into an outcome record, for the caller's transaction or batch."""

    ref: firestore.DocumentReference
    changes: Changes


LISTS = ("hypothesis_ids", "model_versions")
"""What each analysis of the session adds to those before it, never replaces."""


def ended(project_id: str, outcome: Outcome) -> Merge:
    """How one agent's part of the session ended: each analysis of the session adds its
    hypotheses and model versions to those of the analyses before it (a normal end's
    count of the log and a member's analysis of it may settle in either order)."""
    changes: Changes = {key: value for key, value in writable(outcome).items() if key not in LISTS}
    for key in LISTS:
        added = outcome.get(key)
        if added:
            changes[key] = firestore.ArrayUnion(added)
    return Merge(store.outcome_ref(project_id, outcome["session_id"], outcome["agent"]), changes)


def chosen(
    project_id: str, session_id: str, agent: str, choice: ChoiceRecord, expires_at: datetime
) -> Merge:
    """The choice AgentConnect froze for the session, under `selection`."""
    changes: Changes = {
        store.SELECTION: choice,
        "session_id": session_id,
        "expires_at": expires_at,
    }
    return Merge(store.outcome_ref(project_id, session_id, agent), changes)


def grouped(
    project_id: str, session_id: str, agent: str, pattern_id: str | None, expires_at: datetime
) -> Merge:
    """The pattern the session's summary joined (None: it left every pattern), so that a
    pattern's trial counts its arms' members by aggregation (`arms`)."""
    changes: Changes = {"pattern_id": pattern_id, "expires_at": expires_at}
    return Merge(store.outcome_ref(project_id, session_id, agent), changes)


def merge(writer: firestore.Transaction | firestore.WriteBatch, each: Merge) -> None:
    writer.set(each.ref, each.changes, merge=True)
