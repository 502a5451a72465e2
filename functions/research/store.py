"""Where research data lives in Firestore.

workspaces/{ws}/slots/{k}                         an active-run slot: its run, until when
workspaces/{ws}/usage/{shard}                     `tokens_used`: Gemini tokens (shared.spend)
workspaces/{ws}/usage/ceilings                    `shards`: a count each shard has not passed
workspaces/{ws}/conversations/{c}                 title, revision, run_count, expires_at
workspaces/{ws}/conversations/{c}/evidence/{e}    text, source, revision
workspaces/{ws}/runs/{r}                          one run; the assistant message lives in it
workspaces/{ws}/idempotency/{sha256(user, key)}   the run an Idempotency-Key created
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1.field_path import FieldPath

from functions.research.documents import Slot
from shared.spend import Spend
from shared.store import collection, document, read_as

RUNS = "runs"

WORKSPACES = "workspaces"


def conversation_ref(workspace_id: str, conversation_id: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, "conversations", conversation_id)


def evidence_collection(workspace_id: str, conversation_id: str) -> firestore.CollectionReference:
    return collection(WORKSPACES, workspace_id, "conversations", conversation_id, "evidence")


def evidence_ref(
    workspace_id: str, conversation_id: str, evidence_id: str
) -> firestore.DocumentReference:
    return document(
        WORKSPACES, workspace_id, "conversations", conversation_id, "evidence", evidence_id
    )


def runs(workspace_id: str) -> firestore.CollectionReference:
    return collection(WORKSPACES, workspace_id, RUNS)


def run_ref(workspace_id: str, run_id: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, RUNS, run_id)


def idempotency_ref(workspace_id: str, key_hash: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, "idempotency", key_hash)


EVIDENCE_REVISIONS = "evidence_revisions"
"""On the conversation document: {evidence id: revision} of every item it holds, kept in
the transactions that change evidence, so that a status read checks currency at once."""


def revision_field(evidence_id: str) -> str:
    """The field path of one item's revision, for `update` (ids hold `-`, so quoted)."""
    return FieldPath(EVIDENCE_REVISIONS, evidence_id).to_api_repr()


SLOTS = "slots"
"""`workspaces/{ws}/slots/{0 … limit-1}`: `{run_id, until}`. A slot is free when it is
missing (every way its run ends deletes it) or past `until`; an ask takes a free slot by
a commit conditioned on the slot as it read it, and the run records which slot it holds."""

SLOT_ROUNDS = (8, 64)
"""An ask reads the slots in a random order, in widening rounds: the first 8 with its other
reads, the next 64 only if those are all held, then the rest only if those are too. A
workspace far from its limit costs one read; only one near it is read whole."""


def slot_ref(workspace_id: str, slot: str) -> firestore.DocumentReference:
    return document(WORKSPACES, workspace_id, SLOTS, slot)


@dataclass(frozen=True)
class SlotRounds:
    """A workspace's slots in a random order, in rounds: the first drawn at once, the later
    ones only when asked for (with a limit of 1,000, building every slot's reference would
    cost an ask a few milliseconds to read 8 of them)."""

    workspace_id: str
    count: int
    drawn: tuple[int, ...]

    @property
    def first(self) -> list[firestore.DocumentReference]:
        return self._refs(self.drawn)

    def later(self) -> Iterator[list[firestore.DocumentReference]]:
        """The next 64 slots, then the rest, in a random order, each round built as read."""
        drawn = set(self.drawn)
        rest = [k for k in range(self.count) if k not in drawn]
        random.shuffle(rest)
        ends = [end for end in itertools.accumulate(SLOT_ROUNDS[1:]) if end < len(rest)]
        bounds = [0, *ends, len(rest)] if rest else [0]
        for start, end in itertools.pairwise(bounds):
            yield self._refs(rest[start:end])

    def _refs(self, slots: Iterable[int]) -> list[firestore.DocumentReference]:
        return [slot_ref(self.workspace_id, str(k)) for k in slots]


def slot_rounds(workspace_id: str, count: int) -> SlotRounds:
    drawn = random.sample(range(count), min(SLOT_ROUNDS[0], count))
    return SlotRounds(workspace_id, count, tuple(drawn))


def release_slot(
    transaction: firestore.Transaction, workspace_id: str, run_id: str, run: Mapping[str, Any]
) -> None:
    """Free the run's slot if it still holds it: read, then deleted (a transaction's
    reads come first, so call this before writing). For runs that end without a claim
    that holds: cancelled, ended by the sweep or before they started, or settled after
    their lease passed."""
    if "slot" not in run:
        return
    slot = slot_ref(workspace_id, run["slot"])
    held = read_as(slot, Slot, transaction)
    if held is not None and held.get("run_id") == run_id:
        transaction.delete(slot)


def release_own_slot(
    transaction: firestore.Transaction, workspace_id: str, run: Mapping[str, Any]
) -> None:
    """Free the slot of a run settling while its claim holds, without reading it: until
    the lease ends no ask may take that slot over (its `until` lies past the lease)."""
    if "slot" in run:
        transaction.delete(slot_ref(workspace_id, run["slot"]))


def spend(workspace_id: str) -> Spend:
    """The workspace's Gemini tokens, counted against `RESEARCH_WORKSPACE_TOKEN_BUDGET`."""
    return Spend(document(WORKSPACES, workspace_id))
