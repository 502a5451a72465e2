"""Google's Agent Development Kit (`google-adk` 2.13, hash-pinned in
`tests/agents/adk/requirements.lock`) in an interpreter of its own, running
`tests/agents/adk_agent.py` for real.

google-adk 2.13 requires google-genai<3, opentelemetry<=1.44 and websockets<16, which the
project's locks (google-genai 3.6, OpenTelemetry 1.45) cannot give it, so it gets its own
virtual environment, `tests/agents/adk/.venv`, made with the machine's Python 3.11 the
first time it is needed (and again when the lock is newer than its stamp), as the npm
agents' packages are installed with `npm ci`. Every package comes from PyPI, checked
against the lock's hashes, installed by the project's own uv: the install reads no uv
configuration file or `UV_*` variable of this machine, and uv reads none of pip's (no
other index, find-links folder or constraint applies).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(__file__).with_name("adk")
LOCK = PACKAGE / "requirements.lock"
VENV = PACKAGE / ".venv"
STAMP = VENV / ".installed"
PYPI = "https://pypi.org/simple"
UV = Path(sys.executable).with_name("uv")
"""The project's locked uv, which installs the lock in seconds where pip takes half a minute."""
VERSION = "2.13.0"
INSTALL_TIMEOUT_S = 900


def _base_python() -> str:
    """The machine's Python 3.11 (the lock is compiled for it)."""
    found = shutil.which("python3.11")
    if found is None and sys.version_info[:2] == (3, 11):
        found = sys.executable
    assert found is not None, "running Google's ADK needs Python 3.11 (python3.11 on PATH)"
    return found


def _current() -> bool:
    python = VENV / "bin" / "python"
    return python.exists() and STAMP.exists() and STAMP.stat().st_mtime >= LOCK.stat().st_mtime


def ensure_installed() -> Path:
    """The ADK interpreter: `tests/agents/adk/.venv/bin/python`, made anew with the locked
    packages when it is missing or older than the lock. One process builds it at a time."""
    with LOCK.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not _current():
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run(
                [_base_python(), "-m", "venv", "--without-pip", str(VENV)], check=True, timeout=120
            )
            uv_env = {
                name: value for name, value in os.environ.items() if not name.startswith("UV_")
            }
            subprocess.run(
                [
                    str(UV),
                    "pip",
                    "install",
                    "--quiet",
                    "--no-config",
                    "--python",
                    str(VENV / "bin" / "python"),
                    "--index-url",
                    PYPI,
                    "--require-hashes",
                    "--only-binary=:all:",
                    "-r",
                    str(LOCK),
                ],
                env=uv_env,
                check=True,
                timeout=INSTALL_TIMEOUT_S,
            )
            STAMP.touch()
    return VENV / "bin" / "python"


def run_agent(  # noqa: PLR0913 - each is one of the runner's own arguments, named where called
    *,
    endpoint: str,
    token: str,
    gemini_url: str,
    session_id: str,
    agent_name: str,
    turns: int = 3,
    tool_failure: str = "raise",
    env: Mapping[str, str] | None = None,
    timeout_s: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`python -m tests.agents.adk_agent` under the ADK interpreter, from the repository's
    root: its model at `gemini_url`, its traces to `endpoint` with `token` as the bearer
    (passed in the environment, never on the command line). Returned whatever its exit."""
    python = ensure_installed()
    base = {name: os.environ[name] for name in ("PATH", "LANG", "TZ") if name in os.environ}
    command = [str(python), "-m", "tests.agents.adk_agent", "--endpoint", endpoint]
    command += ["--gemini-url", gemini_url, "--session-id", session_id]
    command += ["--agent-name", agent_name, "--turns", str(turns), "--tool-failure", tool_failure]
    return subprocess.run(
        command,
        cwd=ROOT,
        env={**base, "OTLP_TOKEN": token, "GOOGLE_API_KEY": "stand-in-key", **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
