"""Run every measurement and write `benchmarks/results.json`; see `benchmarks/__init__.py`."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import benchmarks
from benchmarks.auto_adopt import auto_adopt
from benchmarks.bursts import bursts
from benchmarks.costs import cost_intervals
from benchmarks.counting import count_round_trips
from benchmarks.growth import growth, pipeline
from benchmarks.hook import hook_overhead
from benchmarks.job_costs import job_costs
from benchmarks.launch import PAIRS, codex_launch_overhead, launch_overhead
from benchmarks.measuring import READ_ONLY, cold_starts, mcp_overhead, round_trips, warm_latency
from benchmarks.pattern_rate import pattern_rate
from benchmarks.patterns import SESSIONS, patterns
from benchmarks.processes import ROOT
from benchmarks.reporting import table
from benchmarks.routing import routing
from benchmarks.routing_changes import changes as routing_changes
from benchmarks.seeding import BENCH_ENV, seed
from benchmarks.session_start import session_start_reads
from benchmarks.telemetry import telemetry
from benchmarks.throughput import throughput
from benchmarks.tokens import token_use
from benchmarks.trials import trials

SECTIONS = (
    "round_trips",
    "job_costs",
    "warm_latency",
    "throughput",
    "cold_start",
    "mcp",
    "growth",
    "pipeline",
    "tokens",
    "bursts",
    "routing",
    "trials",
    "auto_adopt",
    "pattern_rate",
    "session_start",
    "telemetry",
    "cost_intervals",
    "launch",
    "launch_codex",
    "hook",
    "patterns",
)


def _stop(_signum: int, _frame: object) -> None:
    """Turn SIGTERM into an exception so that every started process is stopped."""
    raise KeyboardInterrupt


def _write(out: Path, results: dict[str, Any]) -> None:
    """Keep what is measured so far: a phase that fails leaves the others' figures."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


def _quiet(host: Any) -> None:
    """Wait until the host has handled every trigger that the writes so far caused."""
    host.delivered_probe(30)
    host.in_flight.wait_idle(60)


def _phase(name: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {name}", flush=True)


def main(argv: list[str] | None = None) -> int:
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
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        default=None,
        help=f"measure these sections alone ({','.join(SECTIONS)}), keeping the others "
        "as the results file has them",
    )
    args = parser.parse_args(argv)
    wanted = args.only or set(SECTIONS)

    from cli import emulator as emulator_module
    from cli import local_model
    from cli.gemini_stand_in import GeminiTestServer
    from cli.host import LocalHost
    from shared.instance import renew

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
    renew()
    host = LocalHost(host_port, emulator, owns_emulator=False)
    try:
        _phase("seeding")
        seeded = seed(gemini)
        gemini.respond_with(local_model.answer)
        results: dict[str, Any] = (
            json.loads(args.out.read_text()) if args.only and args.out.exists() else {}
        )
        results["machine"] = {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
        }

        def host_url() -> str:
            if not host.thread.is_alive():
                host.start()
            return str(host.url)

        starts = 2 * (len(READ_ONLY) * args.cold_repeats + 17)
        phases: tuple[tuple[str, str, Callable[[], Any]], ...] = (
            ("round_trips", "round trips", lambda: round_trips(seeded)),
            (
                "job_costs",
                "Firestore and Gemini calls of one research run, analysis and evaluation",
                lambda: job_costs(seeded, gemini),
            ),
            (
                "warm_latency",
                f"warm latency, {args.rounds} rounds a side of 5 endpoints",
                lambda: warm_latency(seeded, env, args.rounds),
            ),
            (
                "throughput",
                "throughput of one instance at concurrency 1, 8 and 32 (about 5 min)",
                lambda: throughput(seeded, env),
            ),
            (
                "cold_start",
                f"cold starts: {starts} processes, each beside its floor",
                lambda: cold_starts(seeded, env, args.cold_repeats),
            ),
            (
                "mcp",
                f"MCP status tool against the HTTP status: {args.rounds} calls a side",
                lambda: mcp_overhead(seeded, env, args.rounds, args.cold_repeats),
            ),
            (
                "growth",
                "growth: list sizes, 11,000 more events, prompt sizes (about 2 min)",
                lambda: growth(seeded, env, args.rounds),
            ),
            (
                "pipeline",
                "trigger pipeline: 20 runs, analyses and evaluations (about 30 s)",
                lambda: pipeline(seeded, host_url(), 20),
            ),
            (
                "tokens",
                "Gemini tokens and cost per analysis, with and without the implicit cache",
                lambda: token_use(seeded, host_url()),
            ),
            (
                "bursts",
                "bursts on one document and mixed load at concurrency 16 (about 2 min)",
                lambda: bursts(seeded, host_url(), gemini),
            ),
            (
                "routing",
                "model selection judged by outcomes: 60 sessions through the real path, "
                "500 simulated replications through the report's estimators, then drift, "
                "version, new-target and small-count simulations (about 15 min)",
                lambda: {**routing(seeded, host_url(), gemini), "changes": routing_changes()},
            ),
            (
                "trials",
                "randomised trials read after every session to 2,000: 4,000 with no "
                "difference at each of three control shares, 2,000 at each unequal split and "
                "loss, 1,000 for each power, harm and sessionsNeeded figure and for each "
                "outcome-dependent loss, the exact method beside the asymptotic one (about "
                "25 min)",
                trials,
            ),
            (
                "auto_adopt",
                "autoAdopt read after every session to 2,000: 2,000 trials with no true "
                "effect at each of three control rates, 1,000 at a ratio of 0.5 (about 5 min)",
                auto_adopt,
            ),
            (
                "pattern_rate",
                "a pattern's own rate per arm, some sessions never summarised and joins "
                "missed: 1,000 trials with no true effect at each of three rates, 500 for "
                "each coverage (about 6 min)",
                pattern_rate,
            ),
            (
                "session_start",
                "documents a session start reads, with standing instructions and without",
                lambda: session_start_reads(seeded),
            ),
            (
                "telemetry",
                "agents' telemetry through the OTLP endpoints: documents per log record, span "
                "and metric point, a 30-prompt Claude Code session and a 20-turn Codex session "
                "(about 30 s)",
                lambda: telemetry(seeded),
            ),
            (
                "cost_intervals",
                "the selection report's mean-cost interval on skewed simulated costs: "
                "2,000 replications at every size from 30 to 300 sessions, seven "
                "distributions (about 5 min)",
                cost_intervals,
            ),
            (
                "launch",
                f"what evidencia launch adds before Claude Code's first model request: "
                f"{PAIRS} launched and {PAIRS} direct runs, interleaved (about 3 min)",
                lambda: launch_overhead(seeded, host_url(), lambda: _quiet(host)),
            ),
            (
                "launch_codex",
                f"what evidencia launch adds before Codex's first model request: "
                f"{PAIRS} launched and {PAIRS} direct runs, interleaved (about 1 min)",
                lambda: codex_launch_overhead(seeded, host_url(), lambda: _quiet(host)),
            ),
            (
                "hook",
                f"what the session-start hook adds before Claude Code's first model request: "
                f"{PAIRS} hooked and {PAIRS} plain runs, interleaved (about 2 min)",
                lambda: hook_overhead(seeded, host_url()),
            ),
            (
                "patterns",
                f"patterns: {SESSIONS:,} ended sessions' summaries seeded, two refreshes in "
                "fresh processes, their coverage and dollars per 1,000 sessions (about 2 min)",
                lambda: patterns(gemini),
            ),
        )
        for section, label, measure in phases:
            if section in wanted:
                _phase(label)
                results[section] = measure()
                _write(args.out, results)
    finally:
        if host.thread.is_alive():
            host.stop()
        gemini.stop()
        emulator.stop()
    print(table(results))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
