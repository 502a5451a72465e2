"""The real Codex CLI (`@openai/codex`, locked in `tests/agents/codex-cli/`: a folder named
`codex` beside this module would shadow it for mypy), run headless (`codex exec --json`)
against the OpenAI stand-in (`cli.openai_stand_in`).

The npm package carries Codex as a native binary in a per-platform optional dependency
(`@openai/codex-linux-x64`), which its `bin/codex.js` runs; everything comes from the npm
registry. `run_codex` installs the locked package with `npm ci` the first time, then runs
`codex exec --json --skip-git-repo-check --strict-config ... PROMPT` in `workdir` with an
environment of its own: CODEX_HOME and HOME are a folder of the caller's (so no user
settings, credentials or sessions leak in or out), holding `config.toml`, which names a
custom model provider (`wire_api = "responses"`, `base_url` the stand-in's `/v1`, the dummy
key in `STAND_IN_API_KEY`), no update check on start-up, no analytics, and the OpenTelemetry
export asked for. Nothing else of the caller's environment is passed on except PATH, LANG,
TZ and what `env` adds.

Codex 0.171 reads its OpenTelemetry settings only from `[otel]` in config.toml (the standard
`OTEL_EXPORTER_OTLP_*` variables do nothing): `exporter` (logs), `trace_exporter` and
`metrics_exporter`, each `"none"` or `{ otlp-http = { endpoint, protocol, headers } }`, where
`endpoint` is the full URL of the signal (Codex appends nothing) and `protocol` is `json` or
`binary`. Metrics go to OpenAI's own collector unless `metrics_exporter` says otherwise, so it
is always set: to the caller's collector, or `"none"`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.npm_locked import npm_ci

PACKAGE = Path(__file__).with_name("codex-cli")
VERSION = "0.171.0"
MODEL = "gpt-5.5"
"""A model Codex 0.171's catalogue knows (another name runs, with a warning that its metadata
is missing); the stand-in answers any name."""
PROVIDER = "stand_in"
KEY_VARIABLE = "STAND_IN_API_KEY"
DUMMY_KEY = "sk-stand-in"
SIGNALS = {"exporter": "logs", "trace_exporter": "traces", "metrics_exporter": "metrics"}
"""Codex's `[otel]` exporter settings, and the OTLP signal each sends."""
NO_EXPORT = dict.fromkeys(SIGNALS, "none")


@dataclass(frozen=True)
class Telemetry:
    """Codex's OpenTelemetry export: OTLP over HTTP to `endpoint`, at `/v1/logs`,
    `/v1/traces` and `/v1/metrics`, with `headers` on every export."""

    endpoint: str
    headers: dict[str, str] = field(default_factory=dict)
    protocol: str = "json"
    """`json` or `binary` (protobuf)."""
    log_user_prompt: bool = True
    """The prompt's text in `codex.user_prompt` (else `[REDACTED]`)."""

    def settings(self) -> dict[str, Any]:
        """The `[otel]` table."""
        exporters = {
            name: {"otlp-http": self.exporter(f"{self.endpoint.rstrip('/')}/v1/{signal}")}
            for name, signal in SIGNALS.items()
        }
        return {"log_user_prompt": self.log_user_prompt, **exporters}

    def exporter(self, url: str) -> dict[str, Any]:
        return {"endpoint": url, "protocol": self.protocol, "headers": self.headers}


@dataclass(frozen=True)
class CodexRun:
    """A finished `codex exec --json`: the process, its JSON lines, the thread's id."""

    process: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]
    """Every JSON line of stdout, in order."""

    @property
    def thread_id(self) -> str | None:
        """The id of the `thread.started` line (the session: OTLP's `conversation.id`)."""
        started = [e for e in self.events if e.get("type") == "thread.started"]
        return str(started[0]["thread_id"]) if started else None

    def completed(self, kind: str) -> list[dict[str, Any]]:
        """The items of this type (`command_execution`, `agent_message`, ...) that were
        completed, in order."""
        done = [e["item"] for e in self.events if e.get("type") == "item.completed"]
        return [item for item in done if item.get("type") == kind]

    @property
    def final_text(self) -> str | None:
        """The last agent message's text."""
        messages = self.completed("agent_message")
        return str(messages[-1]["text"]) if messages else None


def codex_cli() -> Path:
    """The `codex` command of the locked package, installed by `npm ci` when missing or
    older than the lock file."""
    npm_ci(PACKAGE, "running Codex CLI")
    return PACKAGE / "node_modules" / ".bin" / "codex"


def toml_key(key: str) -> str:
    """`key` in TOML: bare when it can be, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """`value` in TOML: a string, a boolean, a number, or an inline table of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    return json.dumps(value)


def toml_table(name: str | None, values: Mapping[str, Any]) -> str:
    header = f"[{name}]\n" if name else ""
    return header + "".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in values.items())


def write_config(home: Path, base_url: str, telemetry: Telemetry | None) -> Path:
    """`config.toml` in `home`: the stand-in as the model provider, no update check, no
    analytics, and the telemetry asked for (else none, metrics included)."""
    provider = {
        "name": "OpenAI stand-in",
        "base_url": f"{base_url.rstrip('/')}/v1",
        "env_key": KEY_VARIABLE,
        "wire_api": "responses",
    }
    tables = [
        toml_table(None, {"model_provider": PROVIDER, "check_for_update_on_startup": False}),
        toml_table("analytics", {"enabled": False}),
        toml_table(f"model_providers.{PROVIDER}", provider),
        toml_table("otel", telemetry.settings() if telemetry else NO_EXPORT),
    ]
    path = home / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(tables))
    return path


def environment(home: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    """What `codex` runs with: nothing of this process's environment but PATH and locale."""
    base = {name: os.environ[name] for name in ("PATH", "LANG", "TZ") if name in os.environ}
    return {
        **base,
        "HOME": str(home),
        "CODEX_HOME": str(home),
        KEY_VARIABLE: DUMMY_KEY,
        "NO_COLOR": "1",
        **(env or {}),
    }


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects of `--json` output, one a line."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def run_codex(  # noqa: PLR0913 - each is one of the CLI's own settings, named where called
    prompt: str,
    *,
    base_url: str,
    home: Path,
    workdir: Path | None = None,
    model: str | None = MODEL,
    sandbox: str | None = None,
    config: Sequence[str] = (),
    telemetry: Telemetry | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 180.0,
) -> CodexRun:
    """`codex exec --json PROMPT`, headless, against the OpenAI stand-in at `base_url`.

    `model` None: Codex's own default; `sandbox`: `read-only` (Codex's default for exec),
    `workspace-write` or `danger-full-access`; `config`: more `-c key=value` overrides (the
    value is TOML, e.g. `model_reasoning_effort="low"`). `workdir` is where the agent works
    (`home/work` when None). Returns the run whatever its exit code; raises
    `subprocess.TimeoutExpired` past `timeout_s`."""
    command = codex_cli()
    workdir = workdir or home / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    write_config(home, base_url, telemetry)
    args = [str(command), "exec", "--json", "--skip-git-repo-check", "--strict-config"]
    if model is not None:
        args += ["-m", model]
    if sandbox is not None:
        args += ["--sandbox", sandbox]
    for override in config:
        args += ["-c", override]
    process = subprocess.run(
        [*args, prompt],
        cwd=workdir,
        env=environment(home, env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return CodexRun(process, json_lines(process.stdout))
