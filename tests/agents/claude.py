"""The real Claude Code CLI (`@anthropic-ai/claude-code`, pinned in
`tests/agents/claude-code/package-lock.json`), run headless (`claude -p`) against a model
stand-in we own (`cli.anthropic_stand_in`).

The npm package carries Claude Code as a native binary in a per-platform optional
dependency (`@anthropic-ai/claude-code-linux-x64` here); its postinstall links it over
`bin/claude.exe`. Everything comes from the npm registry: nothing is downloaded from
elsewhere. When the postinstall did not run (an npm that holds install scripts back),
the platform package's binary is run directly, which is what the package's own
`cli-wrapper.cjs` does.

Each run gets a clean environment: HOME in a folder of the caller's (so no user settings,
credentials or earlier sessions leak in), the stand-in as `ANTHROPIC_BASE_URL` with a
dummy key, no non-essential traffic and no auto-update. Only what the caller passes in
`env` is added (e.g. the OpenTelemetry settings).
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.npm_locked import npm_ci

PACKAGE = Path(__file__).with_name("claude-code")
VERSION = "2.1.332"
DUMMY_KEY = "sk-ant-api03-stand-in"
MODEL = "claude-sonnet-4-5"
"""The main model asked for; the stand-in answers any name."""
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "IS_SANDBOX": "1",
}
"""No update checks, error reports or Anthropic's own operational telemetry (none of it
could leave this machine anyway). `IS_SANDBOX` lets `bypassPermissions` run as root."""


def ensure_installed() -> Path:
    """The `claude` executable, its locked package installed with `npm ci` if it is not yet
    (or the lock is newer than the install)."""
    npm_ci(PACKAGE, "installing Claude Code")
    linked = PACKAGE / "node_modules" / ".bin" / "claude"
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
    arch = machine.get(platform.machine().lower(), platform.machine().lower())
    native = PACKAGE / "node_modules" / "@anthropic-ai" / f"claude-code-linux-{arch}" / "claude"
    # The placeholder left when the postinstall did not run is a small script, not the
    # native binary (hundreds of MB).
    if linked.exists() and linked.resolve().stat().st_size > 1_000_000:
        return linked
    assert native.exists(), f"no Claude Code binary for linux-{arch} in {PACKAGE}"
    return native


def telemetry(
    endpoint: str,
    protocol: str = "http/json",
    traces: bool = True,
    resource: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Claude Code's own OpenTelemetry settings, as its monitoring docs give them: logs and
    metrics over OTLP/HTTP to `endpoint` (`…/v1/logs`, `…/v1/metrics` are appended), and
    traces too when `traces` (they also need the enhanced-telemetry beta flag). Default
    export intervals: each `claude -p` process sends one export per signal as it exits."""
    settings = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
    }
    if traces:
        settings["OTEL_TRACES_EXPORTER"] = "otlp"
        settings["CLAUDE_CODE_ENHANCED_TELEMETRY_BETA"] = "1"
    if resource:
        pairs = ",".join(f"{key}={value}" for key, value in resource.items())
        settings["OTEL_RESOURCE_ATTRIBUTES"] = pairs
    return settings


def environment(base_url: str, home: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """What `claude` runs with: nothing of this process's environment but PATH and locale."""
    base = {name: os.environ[name] for name in ("PATH", "LANG", "TZ") if name in os.environ}
    return {
        **base,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        **QUIET,
        **(env or {}),
    }


def run_claude(  # noqa: PLR0913 - each is one of the CLI's own settings, named where called
    prompt: str,
    *,
    base_url: str,
    home: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    session_id: str | None = None,
    resume: str | None = None,
    permission_mode: str = "bypassPermissions",
    allowed_tools: Sequence[str] = ("Bash",),
    model: str = MODEL,
    output_format: str = "json",
    extra_args: Sequence[str] = (),
    timeout_s: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`claude -p PROMPT`, headless, against the stand-in at `base_url`.

    `session_id` starts a session under that UUID; `resume` continues one (a second prompt
    in the same session). `cwd` is where the agent works (`home` when None). The
    completed process is returned whatever its exit code; with the default `json` output,
    stdout is one JSON result (`session_id`, `is_error`, `result`, `usage`, ...)."""
    executable = ensure_installed()
    home.mkdir(parents=True, exist_ok=True)
    command = [
        str(executable),
        "-p",
        prompt,
        "--output-format",
        output_format,
        "--model",
        model,
        "--permission-mode",
        permission_mode,
    ]
    if allowed_tools:
        command += ["--allowedTools", ",".join(allowed_tools)]
    if session_id is not None:
        command += ["--session-id", session_id]
    if resume is not None:
        command += ["--resume", resume]
    command += list(extra_args)
    return subprocess.run(
        command,
        cwd=cwd or home,
        env=environment(base_url, home, env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
