"""What `evidencia launch` adds before the agent's first model request (#46, #53).

Claude Code's real CLI (npm-locked; installed by `tests/agents/claude.py`, asked for its
path in a subprocess, since the bench imports nothing from the tests) answers against the
Anthropic stand-in, whose recorded arrival times say when the first model request came;
Codex CLI's (`tests/agents/codex.py`, which also writes its `config.toml` in the run's
CODEX_HOME, naming the OpenAI Responses stand-in as its model provider and exporting no
telemetry) against the OpenAI stand-in. Pairs of runs, in alternating order, each timed
from its process's start:

- direct: `claude -p` with the flags the launcher would give it (model, effort,
  permission mode, fast mode, a new session id), no telemetry; `codex exec` with the
  launcher's model, sandbox and effort, no telemetry;
- launched: `evidencia launch --org ORG --agent AGENT -- -p ...` (or `-- exec ...`; the
  installed command, a process of its own) against the local host, its evaluation
  answered by the local development model at once. Codex's telemetry goes through the
  launcher's loopback relay to the linked project.

The launched run's parts come from the host's own request lines (one a request, logged
as it answers, with its latency), caught in this process, and from the evaluation's
document: the start (process start to the session start answered), the freeze (the
evaluation's creation to its freeze, both commit times; the worker's Gemini call inside
it is the evaluation's own `latencyMs`), the wait (the freeze to the launcher's read that
saw it), then the `session.started` event and the agent's own start.

The wait's reads are counted per request: a gRPC interceptor on the host's Firestore
channel keeps each thread's documents read, and each request line takes what its thread
read since its last one. A listener on the evaluation's document would have cost a read
for its first snapshot and one for each change after it (the claim, the freeze): counted
as the writes to that document after the start's own."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from benchmarks.counting import CallCounter
from benchmarks.processes import ROOT
from benchmarks.reporting import summary
from benchmarks.seeding import Seed

PAIRS = 20
WARM_UP = 1
"""Pairs run first and left out: the host's first requests import what they serve."""
GOAL_S = 1.0
"""At most this much at p50 beyond the evaluation's own Gemini call (#46)."""
AGENT = "8a0c6f2e-46b1-4d3a-9e5f-7c2d1b0a4e63"
AGENT_NAME = "launched-agent"
PROMPT = "Fix the flaky login test."
CODEX_AGENT = "3f9d7b21-5c4e-4a8b-b6d0-2e1f9a8c7d54"
PROMPT = "Fix the flaky login test."
TARGET = {
    "runtime": "claude-code",
    "model": "claude-sonnet-4-6",
    "effort": "high",
    "permissionMode": "bypassPermissions",
    "fastMode": False,
}
CODEX_TARGET = {
    "runtime": "codex",
    "model": "gpt-5.5",
    "effort": "low",
    "permissionMode": "default",
    "fastMode": False,
}
DIRECT_FLAGS = [
    "--model",
    str(TARGET["model"]),
    "--permission-mode",
    str(TARGET["permissionMode"]),
    "--effort",
    str(TARGET["effort"]),
    "--fast-mode",
    "off",
]
CODEX_FLAGS = ["-m", "gpt-5.5", "-s", "read-only", "-c", 'model_reasoning_effort="low"']
"""What the launcher gives Codex for `CODEX_TARGET` (the `default` permission mode is
Codex's read-only sandbox)."""
CODEX_EXEC = ["exec", "--json", "--skip-git-repo-check"]
CLAUDE_SETUP = (
    "import json\nfrom tests.agents import claude\n"
    "print(json.dumps({'executable': str(claude.ensure_installed()), "
    "'env': {**claude.QUIET, 'ANTHROPIC_API_KEY': claude.DUMMY_KEY}}))"
)
CODEX_SETUP = (
    "import json, sys\nfrom pathlib import Path\nfrom tests.agents import codex\n"
    "home = Path(sys.argv[1])\ncodex.write_config(home, sys.argv[2], None)\n"
    "print(json.dumps({'executable': str(codex.codex_cli()), "
    "'env': codex.environment(home, None)}))"
)
"""Codex's path, and its environment with its config written in `home` (the stand-in's
URL as its model provider's)."""
RUN_TIMEOUT_S = 180


@dataclass(frozen=True)
class Subject:
    """A runtime as the bench launches it: the agent whose selection chooses it, what the
    launcher is told after `--`, and the direct run's arguments."""

    runtime: str
    label: str
    agent: str
    target: dict[str, Any]
    override: str
    """The launcher's variable naming the runtime's executable."""
    launched: list[str]
    direct: list[str]
    session_flag: str | None
    """The direct run's flag taking a new session id; None: the runtime names its own."""


CLAUDE = Subject(
    runtime="claude-code",
    label="Claude Code",
    agent=AGENT,
    target=TARGET,
    override="EVIDENCIA_CLAUDE",
    launched=["-p", PROMPT, "--output-format", "json"],
    direct=["-p", PROMPT, "--output-format", "json", *DIRECT_FLAGS],
    session_flag="--session-id",
)
CODEX = Subject(
    runtime="codex",
    label="Codex",
    agent=CODEX_AGENT,
    target=CODEX_TARGET,
    override="EVIDENCIA_CODEX",
    launched=[*CODEX_EXEC, PROMPT],
    direct=[CODEX_EXEC[0], *CODEX_FLAGS, *CODEX_EXEC[1:], PROMPT],
    session_flag=None,
)


def _selection(target: dict[str, Any]) -> dict[str, Any]:
    """One question the local model answers (no for this prompt: the default target)."""
    return {
        "decision": {
            "decisionId": "5b0e2c1d-46a4-4f8e-b1c3-9d2a7e6f0b15",
            "question": {
                "type": "boolean",
                "instructions": "Does the task need deep reasoning?",
            },
            "rules": [{"effort": "max", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}],
        },
        "steps": [],
        "default": target,
    }


class ThreadReads(CallCounter):
    """Documents read per thread (a request is served on a thread of its own), and the
    writes that name an evaluation document."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()
        self.evaluation_writes: list[str] = []

    def mine(self) -> CallCounter:
        counter: CallCounter | None = getattr(self.local, "counter", None)
        if counter is None:
            counter = self.local.counter = CallCounter()
        return counter

    def _count(self, details: Any, request: Any) -> None:
        self.mine()._count(details, request)  # noqa: SLF001 - the same counting, per thread
        if details.method.endswith("/Commit"):
            self.evaluation_writes += [
                write.update.name
                for write in request.writes
                if "/evaluations/" in write.update.name
            ]

    def taken(self) -> int:
        """The reads this thread made since it last took them."""
        counter = self.mine()
        reads = counter.reads
        counter.clear()
        return reads


@dataclass(frozen=True)
class Line:
    """One request the host answered: when (this process's monotonic clock), what, its
    latency and the documents it read."""

    at: float
    method: str
    path: str
    status: int
    latency_s: float
    reads: int


class RequestLines(logging.Handler):
    """The host's request lines, caught as they are logged."""

    def __init__(self, reads: ThreadReads, offset: float) -> None:
        super().__init__()
        self.reads, self.offset = reads, offset
        self.lines: list[Line] = []

    def emit(self, record: logging.LogRecord) -> None:
        http = getattr(record, "httpRequest", None)
        if not isinstance(http, dict):
            return
        method, path, status = str(record.msg).split(" ")
        latency = float(str(http.get("latency", "0s")).rstrip("s"))
        at = record.created - self.offset
        self.lines.append(Line(at, method, path, int(status), latency, self.reads.taken()))


@dataclass
class Agent:
    """The runtime's executable, its environment and the stand-in it asks."""

    subject: Subject
    executable: str
    env: dict[str, str]
    model: Any
    work: Path

    def first_request(self, started: float, command: list[str], env: dict[str, str]) -> float:
        """Run `command` to its end; seconds from `started` to its first model request."""
        self.model.reset()
        done = subprocess.run(
            command,
            env=env,
            cwd=self.work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        arrived = [recorded.at for recorded in self.model.requests]
        if done.returncode != 0 or not arrived:
            raise RuntimeError(f"{command[0]} exited {done.returncode}: {done.stderr[-2000:]}")
        first: float = min(arrived) - started
        return first


def _installed(setup: str, *args: str) -> tuple[str, dict[str, str]]:
    """The runtime's executable and environment, as `setup` (run in a subprocess, with
    `args`) prints them."""
    done = subprocess.run(
        [sys.executable, "-c", setup, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["executable"], found["env"]


def _monotonic(moment: datetime, offset: float) -> float:
    return moment.timestamp() - offset


def _launched_run(
    agent: Agent,
    seed: Seed,
    host_url: str,
    lines: RequestLines,
    reads: ThreadReads,
    quiet: Callable[[], object],
) -> dict[str, Any]:
    from shared.clients import db

    subject = agent.subject
    env = {
        **agent.env,
        "EVIDENCIA_URL": host_url,
        "EVIDENCIA_TOKEN": seed.token,
        subject.override: agent.executable,
    }
    command = [str(Path(sys.executable).with_name("evidencia")), "launch"]
    command += ["--org", seed.org, "--agent", subject.agent, "--", *subject.launched]
    lines.lines.clear()
    reads.evaluation_writes.clear()
    started = time.monotonic()
    first = agent.first_request(started, command, env)
    quiet()
    seen = list(lines.lines)
    start = next(ln for ln in seen if ln.method == "POST" and ln.path.endswith("/sessions"))
    polls = [ln for ln in seen if "/model-evaluations/" in ln.path]
    logged = next(ln for ln in seen if ln.path.endswith("/events"))
    source = next(ln for ln in seen if ln.path.endswith("/outcome-source"))
    seq = polls[0].path.rsplit("/", 1)[1]
    evaluation = db().document(f"orgs/{seed.org}/agents/{subject.agent}/evaluations/{seq}").get()
    stored = evaluation.to_dict() or {}
    if stored.get("target", {}).get("runtime") != subject.runtime:
        raise RuntimeError(f"evaluation {seq} froze {stored}")
    created = _monotonic(evaluation.create_time, lines.offset)
    frozen = _monotonic(evaluation.update_time, lines.offset)
    named = f"/evaluations/{seq}"
    changes = sum(name.endswith(named) for name in reads.evaluation_writes) - 1
    return {
        "first_request_s": first,
        "start_s": start.at - started,
        "launcher_up_s": start.at - start.latency_s - started,
        "start_request_s": start.latency_s,
        "freeze_s": frozen - created,
        "gemini_s": float(stored["latencyMs"]) / 1000,
        "wait_s": polls[-1].at - frozen,
        "after_s": logged.at - polls[-1].at,
        "agent_s": started + first - logged.at,
        "polls": len(polls),
        "poll_reads": sum(ln.reads for ln in polls),
        "each_poll": [[ln.status, ln.reads] for ln in polls],
        "start_reads": start.reads,
        "source_reads": source.reads,
        "event_reads": logged.reads,
        "listener_reads": 1 + changes,
        "not_frozen_polls": sum(ln.status == 409 for ln in polls),
    }


def _direct_run(agent: Agent) -> float:
    command = [agent.executable, *agent.subject.direct]
    if agent.subject.session_flag is not None:
        command += [agent.subject.session_flag, str(uuid.uuid4())]
    return agent.first_request(time.monotonic(), command, agent.env)


def _ms(samples_s: list[float]) -> dict[str, float]:
    return summary([sample * 1000 for sample in samples_s])


def _configure(seed: Seed, host_url: str, subject: Subject) -> None:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {seed.token}"
    agent = f"{host_url}/v1/orgs/{seed.org}/agents/{subject.agent}"
    selection = _selection(subject.target)
    session.put(f"{agent}/model-selection", json=selection, timeout=30).raise_for_status()
    session.put(
        f"{agent}/outcome-source",
        json={"projectId": seed.project_small, "agent": AGENT_NAME},
        timeout=30,
    ).raise_for_status()


def launch_overhead(
    seed: Seed, host_url: str, quiet: Callable[[], object], pairs: int = PAIRS
) -> dict[str, Any]:
    """`pairs` launched and direct runs of Claude Code, in alternating order, after
    `WARM_UP` pairs left out; `quiet` waits for the host's trigger deliveries to end."""
    return _overhead(CLAUDE, seed, host_url, quiet, pairs)


def codex_launch_overhead(
    seed: Seed, host_url: str, quiet: Callable[[], object], pairs: int = PAIRS
) -> dict[str, Any]:
    """The same for Codex, against the OpenAI Responses stand-in."""
    return _overhead(CODEX, seed, host_url, quiet, pairs)


def _model_stand_in(subject: Subject) -> Any:
    """The stand-in the runtime asks, started."""
    from cli.anthropic_stand_in import AnthropicTestServer
    from cli.openai_stand_in import OpenAITestServer

    if subject is CODEX:
        return OpenAITestServer().start()
    return AnthropicTestServer().start()


def _agent(subject: Subject, model: Any, folder: Path) -> Agent:
    """The runtime installed, with an environment of its own under `folder`: its home and
    where it works, the stand-in as its model."""
    home, work = folder / "home", folder / "work"
    home.mkdir()
    work.mkdir()
    if subject is CODEX:
        codex, env = _installed(CODEX_SETUP, str(home), model.url)
        return Agent(subject, codex, env, model, work)
    claude, claude_env = _installed(CLAUDE_SETUP)
    kept = {name: os.environ[name] for name in ("PATH", "LANG", "TZ") if name in os.environ}
    env = {
        **kept,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ANTHROPIC_BASE_URL": model.url,
        "NO_COLOR": "1",
        **claude_env,
    }
    return Agent(subject, claude, env, model, work)


def _overhead(
    subject: Subject, seed: Seed, host_url: str, quiet: Callable[[], object], pairs: int
) -> dict[str, Any]:
    from shared.clients import CHANNEL_INTERCEPTORS
    from shared.instance import instance, renew

    reads = ThreadReads()
    offset = time.time() - time.monotonic()
    lines = RequestLines(reads, offset)
    logger = logging.getLogger("evidencia")
    CHANNEL_INTERCEPTORS.append(reads)
    renew(instance().environ)
    logger.addHandler(lines)
    model = _model_stand_in(subject)
    try:
        _configure(seed, host_url, subject)
        with tempfile.TemporaryDirectory(prefix="bench-launch-") as folder:
            agent = _agent(subject, model, Path(folder))
            direct: list[float] = []
            launched: list[dict[str, Any]] = []
            for index in range(WARM_UP + pairs):
                order = ("direct", "launched") if index % 2 == 0 else ("launched", "direct")
                for side in order:
                    if side == "direct":
                        took: Any = _direct_run(agent)
                    else:
                        took = _launched_run(agent, seed, host_url, lines, reads, quiet)
                    if index >= WARM_UP:
                        (direct if side == "direct" else launched).append(took)
                if index >= WARM_UP:
                    print(
                        f"  pair {index + 1 - WARM_UP}: direct {direct[-1]:.2f} s, "
                        f"launched {launched[-1]['first_request_s']:.2f} s",
                        flush=True,
                    )
    finally:
        model.stop()
        logger.removeHandler(lines)
        CHANNEL_INTERCEPTORS.remove(reads)
        renew(instance().environ)
    return _results(direct, launched)


def _results(direct: list[float], launched: list[dict[str, Any]]) -> dict[str, Any]:
    added = [run["first_request_s"] - alone for run, alone in zip(launched, direct, strict=True)]
    beyond = [extra - run["gemini_s"] for extra, run in zip(added, launched, strict=True)]
    parts = (
        *("start_s", "launcher_up_s", "start_request_s", "freeze_s", "gemini_s", "wait_s"),
        *("after_s", "agent_s"),
    )
    polls = [run["polls"] for run in launched]
    poll_reads = [run["poll_reads"] for run in launched]
    listener = [run["listener_reads"] for run in launched]
    beyond_ms = _ms(beyond)
    return {
        "pairs": len(direct),
        "warm_up_pairs": WARM_UP,
        "goal_s": GOAL_S,
        "direct": _ms(direct),
        "launched": _ms([run["first_request_s"] for run in launched]),
        "added": _ms(added),
        "beyond_gemini": beyond_ms,
        "met": beyond_ms["p50_ms"] <= GOAL_S * 1000,
        "parts": {part.removesuffix("_s"): _ms([run[part] for run in launched]) for part in parts},
        "wait_reads": {
            "polls_p50": sorted(polls)[len(polls) // 2],
            "polls_max": max(polls),
            "reads_p50": sorted(poll_reads)[len(poll_reads) // 2],
            "reads_max": max(poll_reads),
            "reads_mean": round(sum(poll_reads) / len(poll_reads), 2),
            "not_frozen_polls_mean": round(
                sum(r["not_frozen_polls"] for r in launched) / len(launched), 2
            ),
            "first_poll_reads_mean": round(
                sum(r["each_poll"][0][1] for r in launched) / len(launched), 2
            ),
            "frozen_read_reads_mean": round(
                sum(r["each_poll"][-1][1] for r in launched) / len(launched), 2
            ),
            "listener_reads_p50": sorted(listener)[len(listener) // 2],
            "not_more_than_listener": sum(
                run["poll_reads"] <= run["listener_reads"] for run in launched
            ),
            "start_reads_mean": round(sum(r["start_reads"] for r in launched) / len(launched), 2),
            "source_reads_mean": round(sum(r["source_reads"] for r in launched) / len(launched), 2),
            "event_reads_mean": round(sum(r["event_reads"] for r in launched) / len(launched), 2),
        },
        "runs": [
            {"direct_s": round(alone, 3), **{k: _rounded(v) for k, v in run.items()}}
            for alone, run in zip(direct, launched, strict=True)
        ],
    }


def _rounded(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value
