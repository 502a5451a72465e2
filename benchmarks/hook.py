"""What the session-start hook adds before Claude Code's first model request (#65).

Claude Code's real CLI (as `benchmarks/launch.py` runs it) against the Anthropic stand-in,
in pairs of runs in alternating order, each timed from its process's start to the first
model request the stand-in recorded:

- plain: `claude -p` with a settings folder of its own that holds no hook;
- hooked: the same, after `evidencia hooks install claude-code` into the user's own
  settings: its `SessionStart` hook runs `evidencia hook claude-code SessionStart`, which
  registers the session with the local host and answers the standing instructions; and
  its telemetry goes to the linked project, as a person who installed the hooks has it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.launch import CLAUDE, PAIRS, WARM_UP, _agent, _configure, _model_stand_in, _ms
from benchmarks.seeding import Seed

GOAL_MS = 300.0
"""At most this much at p50 (#65); the hook's own deadline bounds the worst case at 2 s."""
INSTRUCTIONS = "Run the tests you touched before you say a task is done."


def hook_overhead(seed: Seed, host_url: str, pairs: int = PAIRS) -> dict[str, Any]:
    """`pairs` hooked and plain runs of Claude Code, after `WARM_UP` pairs left out."""
    model = _model_stand_in(CLAUDE)
    try:
        _configure(seed, host_url, CLAUDE)
        _instruct(seed, host_url)
        with tempfile.TemporaryDirectory(prefix="bench-hook-") as folder:
            agent = _agent(CLAUDE, model, Path(folder))
            hooked_env = {**agent.env, "EVIDENCIA_URL": host_url, "EVIDENCIA_TOKEN": seed.token}
            _install(hooked_env, seed)
            plain_env = {**agent.env, "CLAUDE_CONFIG_DIR": str(Path(folder) / "plain")}
            runs: dict[str, list[float]] = {"plain": [], "hooked": []}
            for index in range(WARM_UP + pairs):
                order = ("plain", "hooked") if index % 2 == 0 else ("hooked", "plain")
                for side in order:
                    command = [agent.executable, *CLAUDE.direct, "--session-id", str(uuid.uuid4())]
                    env = hooked_env if side == "hooked" else plain_env
                    took = agent.first_request(time.monotonic(), command, env)
                    if side == "hooked":
                        _check_given(model)
                    if index >= WARM_UP:
                        runs[side].append(took)
                if index >= WARM_UP:
                    print(
                        f"  pair {index + 1 - WARM_UP}: plain {runs['plain'][-1]:.2f} s, "
                        f"hooked {runs['hooked'][-1]:.2f} s",
                        flush=True,
                    )
    finally:
        model.stop()
    added = [h - p for h, p in zip(runs["hooked"], runs["plain"], strict=True)]
    added_ms = _ms(added)
    return {
        "pairs": pairs,
        "warm_up_pairs": WARM_UP,
        "goal_ms": GOAL_MS,
        "plain": _ms(runs["plain"]),
        "hooked": _ms(runs["hooked"]),
        "added": added_ms,
        "met": added_ms["p50_ms"] <= GOAL_MS,
    }


def _instruct(seed: Seed, host_url: str) -> None:
    import requests

    reply = requests.put(
        f"{host_url}/v1/orgs/{seed.org}/agents/{CLAUDE.agent}/instructions",
        json={"text": INSTRUCTIONS},
        headers={"Authorization": f"Bearer {seed.token}"},
        timeout=30,
    )
    reply.raise_for_status()


def _install(env: dict[str, str], seed: Seed) -> None:
    evidencia = str(Path(sys.executable).with_name("evidencia"))
    command = [evidencia, "hooks", "install", "claude-code", "--org", seed.org]
    subprocess.run([*command, "--agent", CLAUDE.agent], env=env, check=True, timeout=60)


def _check_given(model: Any) -> None:
    """A hooked run that did not carry the instructions measured nothing."""
    if not any(INSTRUCTIONS in json.dumps(r.body) for r in model.requests):
        raise RuntimeError("the hooked run's model requests carry no standing instructions")
