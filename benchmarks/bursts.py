"""Bursts on one document and mixed load on one workspace, with real threads against the
local host: what each request answered and how long it took. The figures behind the
"Firestore in production" section of docs/operations.md."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import requests

from benchmarks.reporting import pct
from benchmarks.seeding import Seed, event_batch

BURST = 30
BURST_LIMIT = 5
STALL_S = 20.0
"""How long the stand-in holds each admitted run's Gemini call, so that it stays active."""
MIXED_REQUESTS = 3_000
MIXED_CONCURRENCY = 16
MIXED_CONVERSATIONS = 64


@dataclass(frozen=True)
class Request:
    label: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


Sent = tuple[str, int, float]
"""(label, HTTP status, milliseconds)."""


class Sender:
    def __init__(self, seed: Seed, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {seed.token}"
        adapter = requests.adapters.HTTPAdapter(pool_connections=64, pool_maxsize=64)
        self.session.mount("http://", adapter)

    def send(self, request: Request) -> Sent:
        started = time.perf_counter()
        reply = self.session.post(
            self.url + request.path, json=request.body, headers=request.headers, timeout=120
        )
        return request.label, reply.status_code, (time.perf_counter() - started) * 1000

    def json(self, path: str, body: Any) -> Any:
        reply = self.session.post(self.url + path, json=body, timeout=120)
        reply.raise_for_status()
        return reply.json()

    def at_once(self, requests_: list[Request], concurrency: int | None = None) -> list[Sent]:
        with ThreadPoolExecutor(max_workers=concurrency or len(requests_)) as pool:
            return list(pool.map(self.send, requests_))


def report(sent: list[Sent]) -> dict[str, Any]:
    """Per label: count, answers by status, p50, p95 and the slowest, in milliseconds."""
    by_label: dict[str, list[tuple[int, float]]] = {}
    for label, status, ms in sent:
        by_label.setdefault(label, []).append((status, ms))
    return {
        label: {
            "n": len(entries),
            "statuses": dict(sorted(Counter(str(status) for status, _ in entries).items())),
            "p50_ms": round(pct([ms for _, ms in entries], 0.5), 1),
            "p95_ms": round(pct([ms for _, ms in entries], 0.95), 1),
            "max_ms": round(max(ms for _, ms in entries), 1),
        }
        for label, entries in by_label.items()
    }


def _workspace() -> str:
    from shared import auth
    from shared.clients import db
    from shared.ids import new_uuid

    workspace = new_uuid()
    auth.tenant_ref(db(), "workspace", workspace).set({"kind": "workspace"})
    auth.member_ref(db(), "workspace", workspace, "bench").set({"role": "owner"})
    return workspace


def _conversations(sender: Sender, workspace: str, count: int) -> dict[str, Any]:
    """Conversations holding one evidence item each, so that their runs call Gemini: each
    conversation's id with its item's `{evidence_id, revision}`."""
    made = {}
    for _ in range(count):
        conversation = sender.json(
            "/research-api/conversations/create", {"workspace_id": workspace}
        )["id"]
        stored = sender.json(
            "/research-api/evidence/upsert",
            {
                "workspace_id": workspace,
                "conversation_id": conversation,
                "items": [{"text": "Onboarding took long and the wizard confused me."}],
            },
        )
        made[conversation] = stored["items"][0]
    return made


def _ask(label: str, workspace: str, conversation: str, key: str | None = None) -> Request:
    body = {"workspace_id": workspace, "conversation_id": conversation, "request_kind": "overview"}
    headers = {"Idempotency-Key": key} if key else {}
    return Request(label, "/research-api/assistant/ask", body, headers)


@contextmanager
def _active_run_limit(limit: int) -> Iterator[None]:
    from shared.instance import Instance, install, instance

    before = instance()
    install(Instance({**before.environ, "RESEARCH_MAX_ACTIVE_RUNS": str(limit)}))
    try:
        yield
    finally:
        install(before)


def ask_bursts(sender: Sender, gemini: Any) -> dict[str, Any]:
    """30 asks at once on one workspace, on 30 conversations and on one, with the limit at
    5 and every admitted run held on Gemini; 50 replays of one Idempotency-Key at once."""
    spread_over, one = _workspace(), _workspace()
    many = _conversations(sender, spread_over, BURST)
    single = next(iter(_conversations(sender, one, 1)))
    replayed = _workspace()
    replay_conversation = next(iter(_conversations(sender, replayed, 1)))
    with _active_run_limit(BURST_LIMIT):
        gemini.stall(STALL_S, times=2 * BURST_LIMIT + 1)
        spread = sender.at_once([_ask("30_conversations", spread_over, c) for c in many])
        same = sender.at_once([_ask("one_conversation", one, single) for _ in range(BURST)])
        replays = sender.at_once(
            [_ask("one_key_50_times", replayed, replay_conversation, "k") for _ in range(50)]
        )
    return report(spread + same + replays)


def ingest_burst(sender: Sender, seed: Seed) -> dict[str, Any]:
    """20 batches of 10 events at once into one session, each overlapping the next by 5."""
    events = event_batch(datetime(2026, 11, 2, tzinfo=UTC), 0, 105)
    path = f"/projects/{seed.project_small}/sessions/burst/events"
    batches = [events[start : start + 10] for start in range(0, 100, 5)]
    return report(sender.at_once([Request("20_batches", path, {"events": b}) for b in batches]))


def start_burst(sender: Sender, seed: Seed) -> dict[str, Any]:
    """50 session starts of one agent at once."""
    path = f"/v1/orgs/{seed.org}/agents/{seed.agent}/sessions"
    body = {"title": "Burst", "input": {"repo": "web"}}
    return report(sender.at_once([Request("50_starts", path, body) for _ in range(50)]))


def mixed_load(sender: Sender, seed: Seed) -> dict[str, Any]:
    """3,000 requests at concurrency 16 over 64 conversations of one workspace: evidence
    reads, event batches and asks in turn (the active-run limit at 1,000)."""
    workspace = _workspace()
    conversations = list(_conversations(sender, workspace, MIXED_CONVERSATIONS).items())
    start = datetime(2026, 11, 3, tzinfo=UTC)
    load: list[Request] = []
    for index in range(MIXED_REQUESTS):
        conversation, item = conversations[index % MIXED_CONVERSATIONS]
        kind = index % 3
        if kind == 0:
            body = {"workspace_id": workspace, "conversation_id": conversation, "items": [item]}
            load.append(Request("read", "/research-api/evidence/read", body))
        elif kind == 1:
            session = f"mixed-{index % MIXED_CONVERSATIONS}"
            path = f"/projects/{seed.project_small}/sessions/{session}/events"
            load.append(Request("ingest", path, {"events": event_batch(start, index * 10, 10)}))
        else:
            load.append(_ask("ask", workspace, conversation))
    return report(sender.at_once(load, MIXED_CONCURRENCY))


def bursts(seed: Seed, host_url: str, gemini: Any) -> dict[str, Any]:
    sender = Sender(seed, host_url)
    mixed = mixed_load(sender, seed)
    return {
        "mixed": mixed,
        "ingest": ingest_burst(sender, seed),
        "starts": start_burst(sender, seed),
        "asks": ask_bursts(sender, gemini),
    }
