"""The real Gemini CLI (`@google/gemini-cli`, locked in `tests/agents/gemini-cli/`), run
headless against the Gemini test server.

`run_gemini` installs the locked package with `npm ci` the first time, then runs
`gemini -p PROMPT --approval-mode yolo --model MODEL` in `workdir` with an environment of
its own: HOME is a folder of the caller's (so no user settings, credentials or sessions
leak in or out), holding `~/.gemini/settings.json` with the API-key auth, update checks and
usage statistics off, folder trust off, and the telemetry settings asked for;
`GOOGLE_GEMINI_BASE_URL` points the CLI's `@google/genai` client at the test server and
`GEMINI_API_KEY` is a dummy. Nothing else of the caller's environment is passed on except
`PATH` and what `env` adds.

Gemini CLI 0.61 reads `GOOGLE_GEMINI_BASE_URL` and then picks the auth type "gateway",
which its own headless check refuses ("Invalid auth method selected."): the settings file
names `gemini-api-key` instead, and the base URL still applies to it.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.npm_locked import npm_ci

PACKAGE = Path(__file__).with_name("gemini-cli")
VERSION = "0.61.0"
MODEL = "gemini-3.1-pro-preview"
"""Gemini CLI 0.61's own default model (Pro), which the stand-in's profiles know."""


@dataclass(frozen=True)
class Telemetry:
    """Gemini CLI's telemetry settings (`telemetry` in settings.json): OTLP over HTTP to
    `endpoint`, to which the CLI appends `/v1/traces`, `/v1/logs` and `/v1/metrics`."""

    endpoint: str
    protocol: str = "http"
    traces: bool | None = True
    """Spans carry their GenAI attributes (tool name, call id, messages); None: unset."""
    log_prompts: bool | None = True
    """Prompts, arguments and tool metadata (a shell command's `exitCode`) are logged;
    None: unset (the CLI's default)."""

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "enabled": True,
            "target": "local",
            "otlpEndpoint": self.endpoint,
            "otlpProtocol": self.protocol,
        }
        if self.traces is not None:
            settings["traces"] = self.traces
        if self.log_prompts is not None:
            settings["logPrompts"] = self.log_prompts
        return settings


def gemini_cli() -> Path:
    """The `gemini` command of the locked package, installed by `npm ci` when missing or
    older than the lock file. Without install scripts: they only compile Gemini CLI's
    optional native modules from source (node-pty for an interactive terminal, keytar for
    the system keychain; neither has a prebuilt binary here), about 20 s of a fresh clone's
    CPU, and a headless run with an API key uses neither (Gemini CLI runs its shell
    commands without a pseudo-terminal when node-pty is missing)."""
    npm_ci(PACKAGE, "running Gemini CLI", scripts=False)
    return PACKAGE / "node_modules" / ".bin" / "gemini"


def write_settings(home: Path, telemetry: Telemetry | None) -> Path:
    """`~/.gemini/settings.json` in `home`: the API-key auth, no update check, no usage
    statistics sent to Google, no folder-trust prompt, and the telemetry asked for."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "telemetry": telemetry.settings() if telemetry else {"enabled": False},
    }
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2))
    return path


def run_gemini(  # noqa: PLR0913 - each is one of the CLI's own settings, named where called
    prompt: str,
    *,
    base_url: str,
    home: Path,
    workdir: Path | None = None,
    model: str | None = MODEL,
    session_id: str | None = None,
    telemetry: Telemetry | None = None,
    env: dict[str, str] | None = None,
    output_format: str = "json",
    timeout_s: float = 180.0,
) -> subprocess.CompletedProcess[str]:
    """Gemini CLI run once, headless, on `prompt` against the Gemini server at `base_url`
    (`--session-id` when given: a UUID; `model` None: the CLI's own choice, which asks
    its router first). Returns the finished process (stdout is the
    `--output-format` answer); raises `subprocess.TimeoutExpired` past `timeout_s`."""
    command = gemini_cli()
    workdir = workdir or home / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    write_settings(home, telemetry)
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_API_KEY": "stand-in-key",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "NO_COLOR": "1",
        **(env or {}),
    }
    args = [str(command), "-p", prompt, "--approval-mode", "yolo"]
    args += ["--output-format", output_format]
    if model is not None:
        args += ["--model", model]
    if session_id is not None:
        args += ["--session-id", session_id]
    return subprocess.run(
        args,
        cwd=workdir,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
