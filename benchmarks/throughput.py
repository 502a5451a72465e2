"""What one instance serves: each contract read and ingestion started as a process of its
own with `THREADS` = the concurrency, driven by that many clients at once, beside its
floor served the same way in the same run. Requests per second and p50/p95 latency."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import requests

from benchmarks.measuring import CASES, CONTRACT, timed
from benchmarks.processes import FLOOR, MAIN, served
from benchmarks.reporting import summary
from benchmarks.seeding import Seed, event_batch

LEVELS = (1, 8, 32)
READS_PER_SIDE = 480
BATCHES_PER_SIDE = 96
INGEST_EVENTS = 100
"""Events per ingestion request: an agent's batch, each client on a session of its own."""
WARM_UP = 16

Send = Callable[[requests.Session, int], float]


def _load(send: Send, concurrency: int, total: int) -> dict[str, Any]:
    """`total` requests from `concurrency` clients at once, each with its own connection."""
    numbers = itertools.count()
    lock = threading.Lock()

    def client() -> list[float]:
        times: list[float] = []
        with requests.Session() as session:
            while True:
                with lock:
                    index = next(numbers)
                if index >= total:
                    return times
                times.append(send(session, index))

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        samples = [t for times in pool.map(lambda _: client(), range(concurrency)) for t in times]
    wall = time.perf_counter() - started
    return {**summary(samples), "rps": round(total / wall, 1)}


def _sender(seed: Seed, name: str, base: str, side: str, level: int) -> Send:
    case = next(c for c in CASES if c.name == name)
    headers = {"Authorization": f"Bearer {seed.token}"}
    if name != "psychologist_session_events":
        url = base + case.path(seed, side)
        return lambda session, index: timed(
            session, case.method, url, case.body(seed, index, side), headers
        )
    start = datetime(2026, 11, 3, tzinfo=UTC) + timedelta(days=LEVELS.index(level))

    def ingest(session: requests.Session, index: int) -> float:
        client = index % level
        events = event_batch(start, index * INGEST_EVENTS, INGEST_EVENTS, agent=f"{side}-{client}")
        path = f"/projects/{seed.project_small}/sessions/TP{level}{side}{client}/events"
        return timed(session, "POST", base + path, {"events": events}, headers)

    return ingest


def _shifted(send: Send, offset: int) -> Send:
    """`send` numbering its requests from `offset`, so that no two halves repeat a batch."""
    return lambda session, index: send(session, index + offset)


def _measured(seed: Seed, env: dict[str, str], name: str, level: int) -> dict[str, Any]:
    case = next(c for c in CASES if c.name == name)
    total = BATCHES_PER_SIDE if name == "psychologist_session_events" else READS_PER_SIDE
    threads = {**env, "THREADS": str(level)}
    with served(MAIN, name, threads) as real, served(FLOOR, case.floor, threads) as floor:
        senders = {
            side: _sender(seed, name, base, side, level)
            for side, base in (("function", real), ("floor", floor))
        }
        if name != "psychologist_session_events":
            for send in senders.values():
                _load(send, level, WARM_UP)
        halves: dict[str, list[dict[str, Any]]] = {"function": [], "floor": []}
        for order in (("function", "floor"), ("floor", "function")):
            for side in order:
                shifted = _shifted(senders[side], len(halves[side]) * total)
                halves[side].append(_load(shifted, level, total // 2))
    row: dict[str, Any] = {}
    for side, runs in halves.items():
        row[side] = {
            "rps": round(sum(r["rps"] for r in runs) / len(runs), 1),
            "p50_ms": round(sum(r["p50_ms"] for r in runs) / len(runs), 2),
            "p95_ms": round(max(r["p95_ms"] for r in runs), 2),
        }
    row["rps_ratio"] = round(row["function"]["rps"] / row["floor"]["rps"], 3)
    return row


def throughput(seed: Seed, env: dict[str, str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in (*CONTRACT, "psychologist_session_events"):
        results[name] = {}
        for level in LEVELS:
            row = _measured(seed, env, name, level)
            results[name][str(level)] = row
            print(
                f"  throughput: {name} at {level}: {row['function']['rps']} rps, "
                f"x{row['rps_ratio']:.2f} of the floor",
                flush=True,
            )
    return results
