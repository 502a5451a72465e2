"""An agent's standing instructions, versioned: the one writer that both a person's edit
(AgentConnect) and a trial's adoption (`trials.adopt`) go through. A version is never
changed; the current one is copied onto the agent document, which a session start reads
anyway, so serving it costs no read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.cloud import firestore

from functions.loop.documents import StoredInstructions, TrialOrigin
from shared.retention import utcnow
from shared.store import collection, document, unchanged_since, writable

MAX_CHARS = 8000
"""The request schema's `maxLength` too: a runtime reads its instructions on every turn,
so each character is paid again on every model request of every session (8,000
characters are about 2,000 tokens)."""


def instructions(org_id: str, agent_id: str) -> firestore.CollectionReference:
    return collection("orgs", org_id, "agents", agent_id, "instructions")


def instructions_ref(org_id: str, agent_id: str, version: int) -> firestore.DocumentReference:
    return document("orgs", org_id, "agents", agent_id, "instructions", str(version))


def with_suggestion(current: StoredInstructions | None, sugestao: str) -> str:
    """What adopting a suggestion makes: the current text, then the suggestion."""
    return f"{current['text']}\n\n{sugestao}" if current else sugestao


@dataclass(frozen=True)
class Change:
    """What makes a new version: its text, who and why, and where it came from."""

    text: str
    by: str
    reason: str | None
    origin: TrialOrigin | None = None
    rolled_back_from: int | None = None


def next_version(current: StoredInstructions | None, change: Change) -> StoredInstructions:
    """The version after `current` that `change` makes."""
    return {
        "version": current["version"] + 1 if current else 1,
        "text": change.text,
        "created_at": utcnow(),
        "created_by": change.by,
        "reason": change.reason,
        "origin": change.origin,
        "rolled_back_from": change.rolled_back_from,
    }


def version_ref(
    agent: firestore.DocumentReference, stored: StoredInstructions
) -> firestore.DocumentReference:
    return instructions_ref(agent.parent.parent.id, agent.id, stored["version"])


def add_version(
    writer: firestore.Transaction | firestore.WriteBatch,
    agent: firestore.DocumentReference,
    current: StoredInstructions | None,
    change: Change,
    *,
    also: Mapping[str, Any] | None = None,
    read: firestore.DocumentSnapshot[Any] | None = None,
) -> StoredInstructions:
    """Write the version after `current` (read by the caller in the same transaction or
    conditional commit) and make it the agent's current one, with `also`'s other changes
    to the agent document; given the agent as `read`, only if it is unchanged since.
    Creating the version's document is what two writers at once cannot both do: one of
    them retries and makes the next. The only writer of an agent's instructions."""
    stored = next_version(current, change)
    writer.create(version_ref(agent, stored), writable(stored))
    changes = {"instructions": writable(stored), **(also or {})}
    if read is None:
        writer.set(agent, changes, merge=True)
    else:
        writer.update(agent, changes, option=unchanged_since(read))
    return stored
