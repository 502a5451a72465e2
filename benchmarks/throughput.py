"""What one instance serves: each contract read and ingestion started as a process of its
own with `THREADS` = the concurrency, driven by that many clients at once, beside its
floor served the same way in the same run. Requests per second and p50/p95 latency.

An instance has its vCPU to itself: where the machine has two cores or more, the served
process runs alone on the last one, and the clients and the emulator on the others."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests

from benchmarks.measuring import CASES, CONTRACT, timed
from benchmarks.processes import FLOOR, MAIN, served
from benchmarks.reporting import summary
from benchmarks.seeding import Seed, event_batch

LEVELS = (1, 8, 32)
SECONDS_PER_LOAD = 1.5
PAIRS = 16
"""Per level, sixteen pairs of loads, one of each side, the pairs in alternating order
(function first, then floor first): each pair's ratio is taken over two loads a second and a
half apart, so that this machine's speed, which drifts by more than ten percent over tens of
seconds, moves both sides of it alike. The level's ratio is the median of the pairs'."""
ORDERS = (("function", "floor"), ("floor", "function")) * (PAIRS // 2)
INGEST_EVENTS = 100
"""Events per ingestion request: an agent's batch, each client on a session of its own."""
WARM_UP_S = 1.0

Send = Callable[[requests.Session, int], float]


def _load(send: Send, concurrency: int, seconds: float, first: int = 0) -> dict[str, Any]:
    """`concurrency` clients at once, each on its own connection, sending for `seconds`;
    requests are numbered from `first` so that no two loads repeat a batch."""
    numbers = itertools.count(first)
    lock = threading.Lock()
    until = time.perf_counter() + seconds

    def client() -> list[float]:
        times: list[float] = []
        with requests.Session() as session:
            while time.perf_counter() < until:
                with lock:
                    index = next(numbers)
                times.append(send(session, index))
        return times

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        samples = [t for times in pool.map(lambda _: client(), range(concurrency)) for t in times]
    wall = time.perf_counter() - started
    return {**summary(samples), "rps": round(len(samples) / wall, 1)}


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


PROC = Path("/proc")


def _emulator_processes(port: str) -> list[Path]:
    """The processes of the emulator listening on `port` (this run's, not another's)."""
    found = []
    for process in PROC.iterdir():
        with contextlib.suppress(OSError):
            cmdline = (process / "cmdline").read_bytes()
            emulator = b"cloud-firestore-emulator" in cmdline and port.encode() in cmdline
            if process.name.isdigit() and emulator:
                found.append(process)
    return found


def _pin(processes: list[Path], cores: set[int]) -> None:
    """Every thread of these processes onto `cores` (a process's affinity is per thread)."""
    for process in processes:
        with contextlib.suppress(OSError):
            for thread in (process / "task").iterdir():
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(thread.name), cores)


@contextlib.contextmanager
def instance_core(emulator_port: str) -> Iterator[int | None]:
    """A core for the served process alone, with this process and the emulator moved
    off it while the block runs; None on a one-core machine or without `taskset`."""
    cores = os.sched_getaffinity(0)
    if len(cores) == 1 or shutil.which("taskset") is None:
        yield None
        return
    core = max(cores)
    others = [PROC / str(os.getpid()), *_emulator_processes(emulator_port)]
    _pin(others, cores - {core})
    try:
        yield core
    finally:
        _pin(others, cores)


def _measured(seed: Seed, env: dict[str, str], name: str, level: int) -> dict[str, Any]:
    case = next(c for c in CASES if c.name == name)
    threads = {**env, "THREADS": str(level)}
    with (
        instance_core(env["FIRESTORE_EMULATOR_HOST"].rsplit(":", 1)[1]) as core,
        served(MAIN, name, threads, core) as real,
        served(FLOOR, case.floor, threads, core) as floor,
    ):
        senders = {
            side: _sender(seed, name, base, side, level)
            for side, base in (("function", real), ("floor", floor))
        }
        sent = dict.fromkeys(senders, 0)
        for side, send in senders.items():
            sent[side] += _load(send, level, WARM_UP_S, sent[side])["n"]
        loads: dict[str, list[dict[str, Any]]] = {"function": [], "floor": []}
        for order in ORDERS:
            for side in order:
                load = _load(senders[side], level, SECONDS_PER_LOAD, sent[side])
                sent[side] += load["n"]
                loads[side].append(load)
    pair_ratios = [
        own["rps"] / floor["rps"]
        for own, floor in zip(loads["function"], loads["floor"], strict=True)
    ]
    row: dict[str, Any] = {"instance_core": core}
    for side, runs in loads.items():
        row[side] = {
            "n": sum(r["n"] for r in runs),
            "rps": round(sum(r["rps"] for r in runs) / len(runs), 1),
            "p50_ms": round(sum(r["p50_ms"] for r in runs) / len(runs), 2),
            "p95_ms": round(max(r["p95_ms"] for r in runs), 2),
        }
    row["pair_ratios"] = [round(ratio, 3) for ratio in pair_ratios]
    row["rps_ratio"] = round(statistics.median(pair_ratios), 3)
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
