"""Gemini tokens: how a job stores what it spent (`TokenUsage`), and a tenant's spend,
counted against its budget.

The tokens a tenant (a research workspace, a Psychologist project, an AgentConnect org)
has spent are kept on `SHARDS` documents `{tenant}/usage/{k}`. A job adds its tokens to
the shard its id picks, by an `Increment` in its settling transaction, so that jobs
settling at once do not contend on one document; a check sums the shards. The budget is a
ceiling on starting work, not on finishing it: jobs already running when the budget is
reached still settle and count.

A research workspace also keeps `{tenant}/usage/ceilings`: for each shard, a count the
shard has not passed, so that an ask reads that one document instead of the eight and
reads the shards only once the ceilings add up to the budget. Every write of a ceiling
comes from its shard read in the same transaction (`keep_ceilings` for shards that have
none, `count_under_ceiling` as a job counts), so a shard never passes its ceiling. A
ceiling is set a sixty-fourth of the budget above its shard's count: the ceilings exceed
the spend by at most an eighth of the budget, and a shard must count another
sixty-fourth before its ceiling is written again, about 64 writes of the document over a
whole budget whatever the jobs' sizes. The price is that a job counting this way reads
its shard, so two such jobs settling at once on one shard take turns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from google.cloud import firestore

from shared.store import Snapshot, data_as, read_all, transact


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
CEILINGS = "ceilings"
HEADROOM_SHARE = SHARDS * 8
"""A ceiling lies a sixty-fourth of the budget above its shard's count when it is set, so
the ceilings exceed the spend by at most an eighth of the budget."""


class UsageShard(TypedDict):
    """`{tenant}/usage/{k}`: written only by `Increment`s of its one field."""

    tokens_used: int


class UsageCeilings(TypedDict):
    """`{tenant}/usage/ceilings`: by shard (`"0"` to `"7"`), a count its shard has not
    passed, each written in a transaction that read its shard."""

    shards: dict[str, int]


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

    def ceilings(self) -> firestore.DocumentReference:
        ceilings: firestore.DocumentReference = self.tenant.collection(USAGE).document(CEILINGS)
        return ceilings

    def used(self, snapshots: Mapping[str, firestore.DocumentSnapshot[Any]]) -> int:
        """The tokens spent, from a read that included every shard."""
        return sum(_tokens_used(snapshots[ref.path]) for ref in self.shards())

    def proven_unspent(self, ceilings: Snapshot, budget: int) -> bool:
        """Whether the ceilings as read prove `budget` unspent: every shard has one, and
        they add up to less."""
        held = _held(ceilings)
        return len(held) == SHARDS and sum(held.values()) < budget

    def exhausted(self, read: Mapping[str, Snapshot], budget: int) -> bool:
        """Whether `budget` is spent, from a read that holds the ceilings: no at once while
        they prove it unspent; otherwise the shards say, those `read` lacks read now."""
        if self.proven_unspent(read[self.ceilings().path], budget):
            return False
        missing = [ref for ref in self.shards() if ref.path not in read]
        if missing:
            read = {**read, **read_all(missing)}
        return self.used(read) >= budget

    def count(self, transaction: firestore.Transaction, job_id: str, tokens: int) -> None:
        """Add a job's tokens to its shard."""
        if tokens:
            counter = {"tokens_used": firestore.Increment(tokens)}
            transaction.set(self.shard_of(job_id), counter, merge=True)

    def keep_ceilings(self, ceilings: Snapshot, budget: int) -> None:
        """Give every shard a ceiling, given the ceilings as read: those missing (a
        tenant's first job, or shards counted before ceilings were kept) are set from the
        shards read in one transaction. `count_under_ceiling` keeps them from then on."""
        if len(_held(ceilings)) == SHARDS:
            return

        def complete(transaction: firestore.Transaction) -> None:
            read = read_all([ceilings.reference, *self.shards()], transaction)
            held = _held(read[ceilings.reference.path])
            missing = {
                ref.id: _tokens_used(read[ref.path]) for ref in self.shards() if ref.id not in held
            }
            if missing:
                transaction.set(
                    ceilings.reference, {"shards": _raised(missing, budget)}, merge=True
                )

        transact(complete)

    def ceiling_refs(self, job_id: str) -> list[firestore.DocumentReference]:
        """What `count_under_ceiling` needs read first in its transaction."""
        return [self.ceilings(), self.shard_of(job_id)]

    def count_under_ceiling(
        self,
        transaction: firestore.Transaction,
        read: Mapping[str, Snapshot],
        job_id: str,
        tokens: int,
        budget: int,
    ) -> None:
        """Add a job's tokens to its shard, and raise the shard's ceiling in the same
        transaction when the new count passes it; `read` holds `ceiling_refs(job_id)` as
        this transaction read them."""
        if not tokens:
            return
        ceilings, shard = self.ceiling_refs(job_id)
        count = _tokens_used(read[shard.path]) + tokens
        if count > _held(read[ceilings.path]).get(shard.id, -1):
            transaction.set(ceilings, {"shards": _raised({shard.id: count}, budget)}, merge=True)
        transaction.set(shard, {"tokens_used": firestore.Increment(tokens)}, merge=True)


def _held(ceilings: Snapshot) -> dict[str, int]:
    """The ceilings as read, by shard: none when the document is missing."""
    kept = data_as(ceilings, UsageCeilings)
    return kept["shards"] if kept is not None else {}


def _raised(counts: Mapping[str, int], budget: int) -> dict[str, int]:
    """Each shard's ceiling, a sixty-fourth of the budget above its count."""
    headroom = max(1, budget // HEADROOM_SHARE)
    return {k: count + headroom for k, count in counts.items()}


def _tokens_used(snapshot: firestore.DocumentSnapshot[Any]) -> int:
    shard = data_as(snapshot, UsageShard)
    return int(shard.get("tokens_used", 0)) if shard is not None else 0
