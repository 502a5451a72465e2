"""`evidencia hook RUNTIME EVENT`: the one command an agent's own session-start hook runs
(written by `evidencia hooks install`, `cli/hooks.py`).

It reads the agent's hook JSON on stdin, registers the session with AgentConnect under
the agent's own session id (`startedBy: "hook"`: the same hash gives it its arms as any
start, and a start of the same id again answers the first one's), and prints the agent's
own envelope with the standing instructions and a treatment arm's suggestion. It never
gets in the agent's way: it answers within `DEADLINE_S` whatever happens, always exits 0,
prints nothing but the envelope, and when Evidencia cannot be reached it serves the
instructions it last cached and keeps the session's id to report it, not assigned, at the
next registration that gets through.

`evidencia hook claude-code otel-headers` is Claude Code's `otelHeadersHelper`: the bearer
for its telemetry, read from Evidencia's own file, so that no agent file holds it.

It imports nothing but the standard library's light modules: every session start waits
on it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

DEADLINE_S = 2.0
"""The most a hook adds to an agent's start, whatever Evidencia does."""
REQUEST_S = 1.5
"""The registration's own bound, leaving the rest of the deadline to answer from the cache."""
CONTEXT_CHARS = 10_000
"""Claude Code drops hook context past 10,000 characters; Codex takes about 2,500 tokens."""
REPORTED_PER_RUN = 3
HTTP_SERVER_ERROR = 500
"""Unassigned sessions reported after a registration that got through, at most."""
EVENTS = {
    "claude-code": frozenset({"SessionStart"}),
    "codex": frozenset({"SessionStart", "UserPromptSubmit"}),
    "gemini-cli": frozenset({"SessionStart", "BeforeAgent"}),
}
"""The events each runtime's hook runs the command on: the session's start, and the first
prompt where the start may not fire (Codex starts its hooks at the first prompt)."""
FIRST_PROMPT = frozenset({"UserPromptSubmit", "BeforeAgent"})
LABELS = {"claude-code": "Claude Code", "codex": "Codex", "gemini-cli": "Gemini CLI"}
SESSION_ID = re.compile(r"(?!__.*__$)[A-Za-z0-9_-]{1,128}")
"""A session id the start takes (its request schema's pattern): any other is not ours to
register, and never names a file here."""


def home() -> Path:
    """Evidencia's own per-user folder: `EVIDENCIA_HOME`, else `$XDG_CONFIG_HOME/evidencia`,
    else `~/.config/evidencia`."""
    named = os.environ.get("EVIDENCIA_HOME")
    if named:
        return Path(named)
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "evidencia"


def settings_file() -> Path:
    """Where `hooks install` keeps the URL, the token, the org, agent and linked project,
    and what it wrote into each agent's settings (mode 0600)."""
    return home() / "hooks.json"


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def write_private(path: Path, data: Mapping[str, Any]) -> None:
    """Write `data` as JSON readable by the user alone, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(data, out, indent=2)
    partial.replace(path)


def instructions_added(
    standing: Mapping[str, Any] | None, trials: Sequence[Mapping[str, Any]]
) -> str:
    """What a session is given on top of its own instructions: the standing instructions the
    session start served (`{version, text}`, or None), followed by the suggestion of each
    trial that put the session in its treatment arm; empty when there is neither (a control
    arm adds nothing to the standing instructions)."""
    standing_text = [standing["text"]] if standing and standing.get("text") else []
    suggestions = [t["sugestao"] for t in trials if t["arm"] == "treatment" and t["sugestao"]]
    return "\n\n".join([*standing_text, *suggestions])


def envelope(event: str, text: str) -> str:
    """The runtime's own answer carrying `text` into the model's context (Claude Code,
    Codex and Gemini CLI all read `hookSpecificOutput.additionalContext`); nothing at all
    when there is nothing to add."""
    if not text:
        return ""
    context = text[:CONTEXT_CHARS]
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    )


class Registration:
    """One hook run: the agent's input, Evidencia's settings, and what it answered."""

    def __init__(
        self, runtime: str, event: str, said: Mapping[str, Any], config: Mapping[str, Any]
    ):
        self.runtime, self.event, self.said, self.config = runtime, event, said, config
        found = str(said.get("session_id") or "")
        self.session_id = found if SESSION_ID.fullmatch(found) else ""

    @property
    def marker(self) -> Path:
        return home() / "sessions" / f"{self.runtime}-{self.session_id}"

    def body(self) -> dict[str, Any]:
        folder = Path(str(self.said.get("cwd") or Path.cwd())).name or "/"
        label = LABELS.get(self.runtime, self.runtime)
        task = {"runtime": self.runtime, "repository": folder, "event": self.event}
        source = self.said.get("source") or self.said.get("trigger")
        if isinstance(source, str):
            task["source"] = source
        return {
            "sessionId": self.session_id,
            "title": f"{label} in {folder}"[:500],
            "input": task,
            "startedBy": "hook",
        }

    def register(self, seconds: float) -> dict[str, Any]:
        org = urllib.parse.quote(self.config["org"], safe="")
        agent = urllib.parse.quote(self.config["agent"], safe="")
        return call(
            self.config, "POST", f"/v1/orgs/{org}/agents/{agent}/sessions", self.body(), seconds
        )

    def answer(self, deadline: float) -> str:
        """The envelope for this run, registering the session first."""
        if not self.session_id:
            return ""
        if self.event in FIRST_PROMPT and self.marker.exists():
            return ""  # the start injected already
        try:
            started = self.register(min(REQUEST_S, deadline - time.monotonic()))
        except (OSError, ValueError, KeyError):
            return self.unassigned()
        self.marker.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.marker.touch()
        write_private(home() / "instructions.json", {"instructions": started.get("instructions")})
        report_unassigned(self.config, deadline)
        return envelope(
            self.event, instructions_added(started.get("instructions"), started.get("trials", []))
        )

    def unassigned(self) -> str:
        """Evidencia is away: the cached instructions, and the session kept to be reported
        as not assigned."""
        with (home() / "unassigned.jsonl").open("a") as kept:
            record = {"sessionId": self.session_id, "runtime": self.runtime, "at": time.time()}
            kept.write(json.dumps(record) + "\n")
        cached = read_json(home() / "instructions.json") or {}
        return envelope(self.event, instructions_added(cached.get("instructions"), []))


def call(
    config: Mapping[str, Any],
    method: str,
    path: str,
    body: Mapping[str, Any] | None,
    seconds: float,
) -> dict[str, Any]:
    """One request to Evidencia with the user's token; raises `OSError` on anything but a
    2xx answer (an `HTTPError` is one)."""
    if seconds <= 0:
        raise TimeoutError("no time left")
    request = urllib.request.Request(  # noqa: S310 - http(s), checked at install
        config["url"].rstrip("/") + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {config['token']}", "Content-Type": "application/json"},
    )
    # The URL is the user's own EVIDENCIA_URL, checked to be http(s) at install.
    with urllib.request.urlopen(request, timeout=seconds) as answered:  # noqa: S310
        found = json.loads(answered.read() or b"{}")
    return found if isinstance(found, dict) else {}


def report_unassigned(config: Mapping[str, Any], deadline: float) -> None:
    """Log a `session.started` event, `assigned: false`, to the linked project for a few of
    the sessions that started while Evidencia was away, while the deadline allows."""
    kept = home() / "unassigned.jsonl"
    if not kept.exists() or not config.get("project"):
        return
    lines = kept.read_text().splitlines()
    left = list(lines)
    for line in lines[:REPORTED_PER_RUN]:
        record = json.loads(line)
        event = {
            "id": ulid_now(),
            "agent": config["projectAgent"],
            "type": "session.started",
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record["at"])),
            "data": {"startedBy": "hook", "assigned": False, "runtime": record["runtime"]},
        }
        project = urllib.parse.quote(config["project"], safe="")
        session = urllib.parse.quote(record["sessionId"], safe="")
        try:
            path = f"/projects/{project}/sessions/{session}/events"
            call(config, "POST", path, {"events": [event]}, min(0.5, deadline - time.monotonic()))
        except urllib.error.HTTPError as error:
            if error.code >= HTTP_SERVER_ERROR:
                break  # tried again at the next registration
        except (OSError, ValueError):
            break
        left.remove(line)  # reported, or refused for good (a session that ended since)
    kept.write_text("".join(f"{line}\n" for line in left))


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid_now() -> str:
    """A ULID for now (the events API's ids), without importing a library for it."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def otel_headers(config: Mapping[str, Any]) -> str:
    """Claude Code's `otelHeadersHelper` answer: the telemetry's bearer."""
    return json.dumps({"Authorization": f"Bearer {config['token']}"})


def answer(argv: Sequence[str], deadline: float) -> str:
    """What the hook prints: never raises."""
    try:
        runtime, event = argv[0], argv[1]
        config = read_json(settings_file())
        if config is None:
            return ""
        if event == "otel-headers":
            return otel_headers(config)
        if event not in EVENTS.get(runtime, ()):
            return ""
        said = json.loads(sys.stdin.read(1_000_000) or "{}")
        if not isinstance(said, dict):
            return ""
        return Registration(runtime, event, said, config).answer(deadline)
    except Exception:  # noqa: BLE001 - the agent starts whatever happened here
        return ""


def main(argv: Sequence[str]) -> int:
    deadline = time.monotonic() + DEADLINE_S - 0.1

    def out_of_time(_signal: int, _frame: FrameType | None) -> None:
        os._exit(0)  # silent: the agent starts as if no hook were there

    signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, DEADLINE_S - 0.05)
    said = answer(argv, deadline)
    signal.setitimer(signal.ITIMER_REAL, 0)
    if said:
        sys.stdout.write(said + "\n")
        sys.stdout.flush()
    return 0
