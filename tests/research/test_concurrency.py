"""Asks racing each other, with real threads against the local host.

An ask reads without locking and commits only if what it read is unchanged, so a burst
on one workspace or one conversation neither waits on a lock nor answers `409`: each ask
is admitted while a slot is free and refused with `429` once none is.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import requests

from shared.clients import db
from tests.api import Configure
from tests.research.conftest import Research


def at_once(calls: list[Any]) -> list[requests.Response]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def runs_of(research: Research) -> list[dict[str, Any]]:
    stream = db().collection(f"workspaces/{research.workspace}/runs").stream()
    return [snapshot.to_dict() or {} for snapshot in stream]


def test_one_idempotency_key_sent_50_times_at_once_answers_every_time_with_one_run(
    research: Research,
) -> None:
    research.world.gemini.answer_json(research.answer())
    headers = {"Idempotency-Key": "same-key"}
    replies = at_once([lambda: research.ask(headers=headers) for _ in range(50)])
    assert [reply.status_code for reply in replies] == [202] * 50, [r.text for r in replies]
    assert len({reply.json()["run"]["id"] for reply in replies}) == 1
    assert len(runs_of(research)) == 1


def conversations(research: Research, count: int) -> list[str]:
    """Conversations holding evidence, so that their runs wait on Gemini."""
    made = []
    for _ in range(count):
        conversation = research.api.post(
            "/research-api/conversations/create",
            {"workspace_id": research.workspace},
            research.member,
        ).json()["id"]
        research.api.post(
            "/research-api/evidence/upsert",
            research.body(conversation_id=conversation, items=[{"text": "Onboarding is slow."}]),
            research.member,
        )
        made.append(conversation)
    return made


def admits_exactly_the_limit(research: Research, replies: list[requests.Response]) -> None:
    statuses = sorted(reply.status_code for reply in replies)
    assert statuses == [202] * 3 + [429] * 27, [r.text for r in replies if r.status_code != 202]
    assert all(r.headers["Retry-After"] == "30" for r in replies if r.status_code == 429)
    assert len(runs_of(research)) == 3


def hold_slots(research: Research, slots: range, until: datetime) -> None:
    for k in slots:
        db().document(f"workspaces/{research.workspace}/slots/{k}").set(
            {"run_id": f"held-{k}", "until": until}
        )


def hold_on_gemini(research: Research, times: int) -> None:
    """The next runs wait on Gemini until the test's end opens its gates; a timed stall
    would keep them, and the trigger deliveries queued behind them, for seconds after."""
    for _ in range(times):
        research.world.gemini.held_answer_json({})


def asks_on_30_conversations_admit_exactly_3(research: Research, configure: Configure) -> None:
    configure(RESEARCH_MAX_ACTIVE_RUNS="3")
    hold_on_gemini(research, 3)
    replies = at_once(
        [lambda c=c: research.ask(conversation_id=c) for c in conversations(research, 30)]
    )
    admits_exactly_the_limit(research, replies)


def test_30_asks_at_once_on_30_conversations_admit_exactly_the_active_run_limit(
    research: Research, configure: Configure
) -> None:
    asks_on_30_conversations_admit_exactly_3(research, configure)


def test_30_asks_at_once_on_one_conversation_admit_exactly_the_active_run_limit(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_MAX_ACTIVE_RUNS="3")
    hold_on_gemini(research, 3)
    replies = at_once([research.ask for _ in range(30)])
    admits_exactly_the_limit(research, replies)
    assert sorted(run["generation"] for run in runs_of(research)) == [1, 2, 3]


def test_30_asks_at_once_take_over_slots_past_their_time_without_passing_the_limit(
    research: Research, configure: Configure
) -> None:
    hold_slots(research, range(3), datetime.now(UTC) - timedelta(seconds=1))
    asks_on_30_conversations_admit_exactly_3(research, configure)


def test_an_ask_finds_the_one_free_slot_even_when_its_sample_misses_it(
    research: Research, configure: Configure
) -> None:
    """99 of 100 slots held: the first 8 read miss the free one 92 times in 100, and the ask
    then reads the next 64, and the last 28 if those miss it too. Each admitted run settles
    (the stand-in fails it), which frees the slot again; the last one is held on Gemini, and
    the next ask finds no slot."""
    configure(RESEARCH_MAX_ACTIVE_RUNS="100")
    hold_slots(research, range(1, 100), datetime.now(UTC) + timedelta(hours=1))
    for _ in range(20):
        asked = research.ask()
        assert asked.status_code == 202, asked.text
        research.settled(asked.json()["run"]["id"])
    hold_on_gemini(research, 1)
    held = research.ask()
    assert held.status_code == 202, held.text
    assert research.ask().status_code == 429
