"""Asks racing each other, with real threads against the local host.

Every request here contends on one workspace document. The emulator serialises such
transactions poorly (they abort and retry), so a request may lose and answer `409` with
`Retry-After`; what may never happen is a `500`, a limit exceeded, or a key used twice.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from shared.clients import db
from tests.api import Configure
from tests.research.conftest import Research

RETRY_LATER = {409, 503}


def at_once(calls: list[Any]) -> list[requests.Response]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def runs_of(research: Research) -> list[dict[str, Any]]:
    stream = db().collection(f"workspaces/{research.workspace}/runs").stream()
    return [snapshot.to_dict() or {} for snapshot in stream]


def test_one_idempotency_key_sent_30_times_at_once_creates_one_run(research: Research) -> None:
    research.world.gemini.answer_json(research.answer())
    headers = {"Idempotency-Key": "same-key"}
    replies = at_once([lambda: research.ask(headers=headers) for _ in range(30)])
    created = {reply.json()["run"]["id"] for reply in replies if reply.status_code == 202}
    assert len(created) == 1, [reply.text for reply in replies]
    for reply in replies:
        assert reply.status_code == 202 or (
            reply.status_code in RETRY_LATER and "Retry-After" in reply.headers
        ), reply.text
    assert len(runs_of(research)) == 1


def test_asks_at_once_on_30_conversations_never_pass_the_active_run_limit(
    research: Research, configure: Configure
) -> None:
    configure(RESEARCH_MAX_ACTIVE_RUNS="3")
    research.world.gemini.stall(2.0, times=30)
    conversations = [
        research.api.post(
            "/research-api/conversations/create",
            {"workspace_id": research.workspace},
            research.member,
        ).json()["id"]
        for _ in range(30)
    ]
    replies = at_once(
        [lambda c=conversation: research.ask(conversation_id=c) for conversation in conversations]
    )
    statuses = [reply.status_code for reply in replies]
    assert 500 not in statuses
    assert all(s in {202, 429, *RETRY_LATER} for s in statuses), statuses
    assert all("Retry-After" in r.headers for r in replies if r.status_code != 202)
    assert 1 <= statuses.count(202) <= 3
    assert len(runs_of(research)) == statuses.count(202)
