"""A workspace's token budget, checked by an ask on the usage shards' ceilings: one
document instead of eight while the spend is far from the budget, the shards themselves
only near it, and never an ask admitted past it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud.firestore_v1.batch import WriteBatch

from benchmarks.counting import CallCounter
from shared.clients import CHANNEL_INTERCEPTORS, db
from shared.instance import instance, renew
from shared.spend import SHARDS
from tests.api import Configure, function_client, wait_for
from tests.research.conftest import Research
from tests.research.test_concurrency import at_once, conversations

BUDGET = "1000"
"""A ceiling is set 15 tokens (a sixty-fourth) above its shard's count."""


class ReadsOfThisThread(CallCounter):
    """The documents each batched read of this thread asks for (the worker the local host
    runs meanwhile is not counted), as paths below the database root."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()
        self.batches: list[list[str]] = []

    def clear(self) -> None:
        super().clear()
        self.batches.clear()

    def _count(self, details: Any, request: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        super()._count(details, request)
        if details.method.endswith("/BatchGetDocuments"):
            self.batches.append([name.split("/documents/", 1)[1] for name in request.documents])


@pytest.fixture
def reads(research: Research) -> Iterator[ReadsOfThisThread]:
    recorder = ReadsOfThisThread()
    CHANNEL_INTERCEPTORS.append(recorder)
    renew(instance().environ)
    yield recorder
    CHANNEL_INTERCEPTORS.remove(recorder)
    renew(instance().environ)


def spend_tokens(research: Research, tokens: int) -> None:
    """One run that completes, having spent `tokens`."""
    research.world.gemini.answer_json(research.answer(), usage=(tokens - 10, 10), thoughts=0)
    asked = research.ask()
    assert asked.status_code == 202, asked.text
    assert research.settled(asked.json()["run"]["id"])["run"]["status"] == "completed"


def ask_here(research: Research) -> dict[str, Any]:
    """An ask served in this thread, so that its reads are the ones recorded."""
    reply = function_client("research_ask").post(
        "/research-api/assistant/ask",
        json=research.body(request_kind="overview"),
        headers={"Authorization": f"Bearer {research.member}"},
    )
    assert reply.status_code == 202, reply.get_data(as_text=True)
    run: dict[str, Any] = reply.get_json()["run"]
    research.settled(run["id"])
    return run


def ask_reads(research: Research, reads: ReadsOfThisThread) -> list[list[str]]:
    """The ask's batched reads after its authentication's, as paths in the workspace."""
    prefix = f"workspaces/{research.workspace}/"
    asked = [batch for batch in reads.batches if not any(p.startswith("tokens/") for p in batch)]
    return [[path.removeprefix(prefix) for path in batch] for batch in asked]


def shard_paths() -> list[str]:
    return [f"usage/{k}" for k in range(SHARDS)]


def usage(research: Research) -> dict[str, dict[str, Any]]:
    stream = db().collection(f"workspaces/{research.workspace}/usage").stream()
    return {snapshot.id: snapshot.to_dict() or {} for snapshot in stream}


def assert_every_shard_under_its_ceiling(research: Research) -> dict[str, int]:
    stored = usage(research)
    ceilings: dict[str, int] = stored["ceilings"]["shards"]
    assert sorted(ceilings) == [str(k) for k in range(SHARDS)]
    for k in range(SHARDS):
        assert stored.get(str(k), {}).get("tokens_used", 0) <= ceilings[str(k)], stored
    return ceilings


def write_shards(research: Research, counts: dict[str, int]) -> None:
    for shard, tokens in counts.items():
        db().document(f"workspaces/{research.workspace}/usage/{shard}").set({"tokens_used": tokens})


def refused_at_once(research: Research) -> None:
    asked = research.ask()
    assert asked.status_code == 202, asked.text
    run = asked.json()["run"]
    assert (run["status"], run["failure_code"]) == ("failed", "budget_exhausted")


def test_an_ask_far_from_the_budget_reads_the_ceilings_and_no_usage_shard(
    research: Research, configure: Configure, reads: ReadsOfThisThread
) -> None:
    configure(RESEARCH_MAX_ACTIVE_RUNS="100")
    spend_tokens(research, 160)
    reads.clear()
    research.world.gemini.answer_json(research.answer())
    ask_here(research)
    asked = ask_reads(research, reads)
    assert len(asked) == 1, "the ask's own documents come in one batched read"
    (batch,) = asked
    assert f"conversations/{research.conversation}" in batch
    assert "usage/ceilings" in batch
    assert not set(shard_paths()) & set(batch)
    assert len(batch) == 10, "the conversation, 8 slots and the ceilings: 17 with the shards"
    assert reads.calls.count("Commit") == 1


def test_an_ask_reads_the_usage_shards_once_the_ceilings_reach_the_budget(
    research: Research, configure: Configure, reads: ReadsOfThisThread
) -> None:
    configure(RESEARCH_WORKSPACE_TOKEN_BUDGET=BUDGET)
    spend_tokens(research, 900)
    assert sum(assert_every_shard_under_its_ceiling(research).values()) >= int(BUDGET)
    reads.clear()
    research.world.gemini.answer_json(research.answer())
    assert ask_here(research)["status"] == "queued", "900 of 1,000 tokens spent: admitted"
    assert ask_reads(research, reads)[1] == shard_paths()


def test_an_ask_planning_again_reads_the_shards_with_its_first_read_once_it_needed_them(
    research: Research, reads: ReadsOfThisThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new workspace has no ceilings until its first run starts, so its first asks read
    the shards; one that lost its commit to another writer plans again in one read."""
    commit, thread = WriteBatch.commit, threading.get_ident()
    lost: list[bool] = []

    def lose_once(batch: WriteBatch, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == thread and not lost:
            lost.append(True)
            raise exceptions.FailedPrecondition("another writer came first")  # type: ignore[no-untyped-call]
        return commit(batch, *args, **kwargs)

    monkeypatch.setattr(WriteBatch, "commit", lose_once)
    research.world.gemini.answer_json(research.answer())
    reads.clear()
    ask_here(research)
    first, shards, again = ask_reads(research, reads)
    assert "usage/ceilings" in first
    assert not set(shard_paths()) & set(first)
    assert shards == shard_paths()
    assert set(shard_paths()) <= set(again)
    assert set(first) <= set(again)


def test_an_ask_is_refused_once_runs_admitted_on_the_ceilings_spent_the_budget(
    research: Research, configure: Configure, reads: ReadsOfThisThread
) -> None:
    configure(RESEARCH_WORKSPACE_TOKEN_BUDGET=BUDGET)
    spend_tokens(research, 600)
    reads.clear()
    research.world.gemini.answer_json(research.answer(), usage=(590, 10), thoughts=0)
    assert ask_here(research)["status"] == "queued"
    assert len(ask_reads(research, reads)) == 1, "admitted on the ceilings alone"
    assert research.tokens_used() == 1200
    refused_at_once(research)
    assert len(research.world.gemini.requests) == 2


def test_shards_counted_before_any_ceiling_refuse_an_ask_past_the_budget(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_WORKSPACE_TOKEN_BUDGET=BUDGET)
    write_shards(research, {"3": 1000})
    refused_at_once(research)
    assert research.world.gemini.requests == []


def test_a_shard_without_a_ceiling_refuses_an_ask_past_the_budget(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_WORKSPACE_TOKEN_BUDGET=BUDGET)
    ceilings = {str(k): 1 for k in range(SHARDS - 1)}
    db().document(f"workspaces/{research.workspace}/usage/ceilings").set({"shards": ceilings})
    write_shards(research, {str(SHARDS - 1): 1000})
    refused_at_once(research)


def test_the_first_run_gives_every_shard_a_ceiling_above_what_it_counted_before(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_WORKSPACE_TOKEN_BUDGET=BUDGET)
    write_shards(research, {"2": 300, "5": 200})
    spend_tokens(research, 100)
    ceilings = assert_every_shard_under_its_ceiling(research)
    assert ceilings["2"] >= 315
    assert research.tokens_used() == 600


def test_runs_far_from_the_budget_leave_the_ceilings_unwritten(research: Research) -> None:
    spend_tokens(research, 160)
    ceilings = db().document(f"workspaces/{research.workspace}/usage/ceilings")
    written = ceilings.get().update_time
    for _ in range(3):
        spend_tokens(research, 160)
    assert ceilings.get().update_time == written
    assert_every_shard_under_its_ceiling(research)


def test_runs_settling_at_once_count_every_token_under_their_ceilings(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_MAX_ACTIVE_RUNS="12", RESEARCH_WORKSPACE_TOKEN_BUDGET="100000")
    spend_tokens(research, 160)
    for _ in range(12):
        research.world.gemini.answer_json(research.answer(), usage=(3000, 10), thoughts=0)
    replies = at_once(
        [lambda c=c: research.ask(conversation_id=c) for c in conversations(research, 12)]
    )
    assert [reply.status_code for reply in replies] == [202] * 12, [r.text for r in replies]
    wait_for(lambda: research.tokens_used() == 160 + 12 * 3010, timeout=60)
    assert_every_shard_under_its_ceiling(research)
