"""Gemini tokens: how a job stores what it spent (`TokenUsage`), and a tenant's spend,
counted against its budget.

The tokens a tenant (a research workspace, a Psychologist project, an AgentConnect org)
has spent are kept on `SHARDS` documents `{tenant}/usage/{k}`. A job adds its tokens to
the shard its id picks, by a blind `Increment` in its settling transaction, so that jobs
settling at once never contend on one document; a check sums the shards in a read it
makes anyway. The budget is a ceiling on starting work, not on finishing it: jobs already
running when the budget is reached still settle and count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from google.cloud import firestore

from shared.store import data_as


class TokenUsage(TypedDict):
    """A job's Gemini tokens as every API stores them (a run's and an analysis's `usage`)."""

    input_tokens: int
    output_tokens: int
    """Thought tokens included: they are billed as output."""
    cached_tokens: int
    """Prompt tokens the implicit cache served (part of `input_tokens`)."""
    thought_tokens: int
    """Thinking tokens (part of `output_tokens`)."""


NO_TOKENS: TokenUsage = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cached_tokens": 0,
    "thought_tokens": 0,
}


SHARDS = 8
USAGE = "usage"


class UsageShard(TypedDict):
    """`{tenant}/usage/{k}`: written only by `Increment`s of its one field."""

    tokens_used: int


@dataclass(frozen=True)
class Spend:
    tenant: firestore.DocumentReference

    def shards(self) -> list[firestore.DocumentReference]:
        return [self._shard(k) for k in range(SHARDS)]

    def shard_of(self, job_id: str) -> firestore.DocumentReference:
        return self._shard(int(hashlib.sha256(job_id.encode()).hexdigest()[:8], 16) % SHARDS)

    def _shard(self, k: int) -> firestore.DocumentReference:
        shard: firestore.DocumentReference = self.tenant.collection(USAGE).document(str(k))
        return shard

    def used(self, snapshots: Mapping[str, firestore.DocumentSnapshot[Any]]) -> int:
        """The tokens spent, from a read that included every shard."""
        return sum(_tokens_used(snapshots[ref.path]) for ref in self.shards())

    def count(self, transaction: firestore.Transaction, job_id: str, tokens: int) -> None:
        """Add a job's tokens to its shard."""
        if tokens:
            counter = {"tokens_used": firestore.Increment(tokens)}
            transaction.set(self.shard_of(job_id), counter, merge=True)


def _tokens_used(snapshot: firestore.DocumentSnapshot[Any]) -> int:
    shard = data_as(snapshot, UsageShard)
    return int(shard.get("tokens_used", 0)) if shard is not None else 0
