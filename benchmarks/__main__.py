"""Run every measurement and write `benchmarks/results.json`; see `benchmarks/__init__.py`."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import benchmarks
from benchmarks.bursts import bursts
from benchmarks.counting import count_round_trips
from benchmarks.growth import growth, pipeline
from benchmarks.measuring import READ_ONLY, cold_starts, mcp_overhead, round_trips, warm_latency
from benchmarks.processes import ROOT
from benchmarks.reporting import table
from benchmarks.seeding import BENCH_ENV, seed
from benchmarks.tokens import token_use


def _stop(_signum: int, _frame: object) -> None:
    """Turn SIGTERM into an exception so that every started process is stopped."""
    raise KeyboardInterrupt


def _phase(name: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {name}", flush=True)


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0915 - the phases in the order they run
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=benchmarks.__doc__)
    parser.add_argument(
        "--rounds", type=int, default=200, help="requests per side (at least 200 for the record)"
    )
    parser.add_argument(
        "--cold-repeats",
        type=int,
        default=10,
        help="cold starts of each read-only function, and of the floor beside each",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results.json")
    args = parser.parse_args(argv)

    from cli import emulator as emulator_module
    from cli import local_model
    from cli.gemini_stand_in import GeminiTestServer
    from cli.host import LocalHost
    from shared.clients import reset_clients

    signal.signal(signal.SIGTERM, _stop)
    host_port = emulator_module.free_port()
    _phase("starting the Firestore emulator and the Gemini stand-in")
    emulator = emulator_module.start(functions_port=host_port)
    gemini = GeminiTestServer().start()
    os.environ.update(BENCH_ENV)
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
    os.environ["GEMINI_BASE_URL"] = gemini.url
    env = {**os.environ}
    count_round_trips()
    reset_clients()
    host = LocalHost(host_port, emulator, owns_emulator=False)
    try:
        _phase("seeding")
        seeded = seed(gemini)
        gemini.respond_with(local_model.answer)
        results: dict[str, Any] = {
            "machine": {
                "platform": platform.platform(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        }
        _phase("round trips")
        results["round_trips"] = round_trips(seeded)
        _phase(
            f"warm latency, {args.rounds} rounds a side of 5 endpoints (about {args.rounds // 3} s)"
        )
        results["warm_latency"] = warm_latency(seeded, env, args.rounds)
        starts = 2 * (len(READ_ONLY) * args.cold_repeats + 17)
        _phase(f"cold starts: {starts} processes, each beside its floor (about {starts // 2} s)")
        results["cold_start"] = cold_starts(seeded, env, args.cold_repeats)
        _phase(f"MCP status tool against the HTTP status: {args.rounds} calls a side (about 1 min)")
        results["mcp"] = mcp_overhead(seeded, env, args.rounds, args.cold_repeats)
        _phase("growth: list sizes, 11,000 more events, prompt sizes (about 2 min)")
        results["growth"] = growth(seeded, env, args.rounds)
        _phase("trigger pipeline: 20 runs, analyses and evaluations (about 30 s)")
        host.start()
        results["pipeline"] = pipeline(seeded, host.url, 20)
        _phase("Gemini tokens per analysis and the implicit cache's share (about 20 s)")
        results["tokens"] = token_use(seeded, host.url)
        _phase("bursts on one document and mixed load at concurrency 16 (about 2 min)")
        results["bursts"] = bursts(seeded, host.url, gemini)
    finally:
        if host.thread.is_alive():
            host.stop()
        gemini.stop()
        emulator.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
