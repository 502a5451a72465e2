"""`evidencia launch` driven in this process against the local host, with the real coding
agents behind recording wrappers: a script named `claude` / `gemini` / `codex`, first on
PATH, that writes its argv, the names of its environment variables and its pid, then runs
the real CLI with no input on stdin. A Codex stand-in process (`codex-stand-in`) exports a
real Codex CLI capture to the exporters its arguments name."""

from __future__ import annotations

import io
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cli import launch
from cli.anthropic_stand_in import AnthropicTestServer
from cli.gemini_stand_in import GeminiTestServer, Recorded, Reply
from cli.openai_stand_in import OpenAITestServer
from functions.loop.randomization import arm_of
from tests.agentconnect.conftest import AGENT, FIRST, selection_with
from tests.agents import claude, codex, gemini
from tests.api import document, wait_for
from tests.loop.linked import Loop

CLAUDE_TARGET = {
    "runtime": "claude-code",
    "model": "claude-sonnet-4-6",
    "effort": "high",
    "permissionMode": "bypassPermissions",
    "fastMode": False,
}
"""A model that takes effort: Claude Code 2.1.332 sends `output_config.effort` for it."""
CODEX_TARGET = {
    "runtime": "codex",
    "model": "gpt-5.5",
    "effort": "high",
    "permissionMode": "acceptEdits",
    "fastMode": False,
}
GEMINI_TARGET = {
    "runtime": "gemini-cli",
    "model": "gemini-3.1-pro-preview",
    "effort": "medium",
    "permissionMode": "bypassPermissions",
    "fastMode": False,
}
DEEP = {"type": "boolean", "instructions": "Does the task need deep reasoning?"}
WHEN_DEEP = {"type": "boolean", "thresholds": {"true": 0.8}}
LAUNCHED = selection_with(
    decision={
        "decisionId": FIRST,
        "question": DEEP,
        "rules": [{**CLAUDE_TARGET, "when": WHEN_DEEP}],
    },
    steps=[],
    default=GEMINI_TARGET,
)
"""A title with "deep" runs Claude Code (rule 1), any other Gemini CLI (the default)."""
CODEX_LAUNCHED = selection_with(
    decision={
        "decisionId": FIRST,
        "question": DEEP,
        "rules": [{**CODEX_TARGET, "when": WHEN_DEEP}],
    },
    steps=[],
    default=CLAUDE_TARGET,
)
"""A title with "deep" runs Codex (rule 1), any other Claude Code (a rule's permission mode
may not be above the default's)."""
BOTH = ("agent:connect", "agent:psychologist")

WRAPPER = """#!{python}
import json, os, sys, time
record = {{"argv": sys.argv[1:], "env": sorted(os.environ), "pid": os.getpid()}}
name = "{name}-%d.json" % time.time_ns()
with open(os.path.join({records!r}, name), "w") as out:
    json.dump(record, out)
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.execv({real!r}, [{real!r}, *sys.argv[1:]])
"""
CODEX_SAMPLES = Path(__file__).parents[1] / "telemetry_samples" / "codex"
CODEX_STAND_IN = """#!{python}
import json, os, sys, time, tomllib, urllib.request
args = sys.argv[1:]
answers = []
for flag, setting in zip(args, args[1:]):
    exporter = tomllib.loads(setting).get("otel", {{}}) if flag == "-c" else {{}}
    for key, signal in (("exporter", "logs"), ("trace_exporter", "traces")):
        if isinstance(exporter.get(key), dict):
            url = exporter[key]["otlp-http"]["endpoint"]
            body = open(os.path.join({samples!r}, signal + ".json"), "rb").read()
            request = urllib.request.Request(
                url, data=body, method="POST", headers={{"Content-Type": "application/json"}}
            )
            with urllib.request.urlopen(request) as reply:
                answers.append([url, reply.status, reply.read().decode()])
record = {{"argv": args, "env": dict(os.environ), "answers": answers}}
with open(os.path.join({records!r}, "codex-stand-in-%d.json" % time.time_ns()), "w") as out:
    json.dump(record, out)
sys.exit(int(os.environ.get("CODEX_STAND_IN_EXIT", "0")))
"""
"""Codex as far as the launcher sees it, named by `EVIDENCIA_CODEX`: it reads its `-c`
settings as TOML, exports the real capture of a Codex CLI 0.171 run
(`tests/telemetry_samples/codex`) to the logs and traces exporters they name, records its
argv, environment and each exporter's answer, and exits with `CODEX_STAND_IN_EXIT`."""


@pytest.fixture(scope="module")
def anthropic() -> Iterator[AnthropicTestServer]:
    claude.ensure_installed()
    server = AnthropicTestServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gemini_model() -> Iterator[GeminiTestServer]:
    """Gemini CLI's model: a stand-in of its own, apart from the one AgentConnect asks."""
    gemini.gemini_cli()
    server = GeminiTestServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def openai_model() -> Iterator[OpenAITestServer]:
    """Codex CLI's model."""
    codex.codex_cli()
    server = OpenAITestServer().start()
    yield server
    server.stop()


@dataclass
class Launched:
    """One launch: its exit status, what it said on stderr and what the wrapper saw."""

    code: int
    stderr: str
    session_id: str
    records: list[dict[str, Any]]

    @property
    def argv(self) -> list[str]:
        assert len(self.records) == 1, self.records
        argv: list[str] = self.records[0]["argv"]
        return argv

    def flag(self, name: str) -> str:
        argv = self.argv
        assert name in argv, (name, argv)
        return argv[argv.index(name) + 1]


@dataclass
class Launch:
    """Launch agents of a linked org as `lee`, a member of the org and the project."""

    loop: Loop
    token: str
    claude_model: AnthropicTestServer
    gemini_model: GeminiTestServer
    codex_model: OpenAITestServer
    home: Path
    records: Path
    bin: Path
    work: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        base = {name: os.environ[name] for name in ("LANG", "TZ") if name in os.environ}
        return {
            **base,
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "ANTHROPIC_BASE_URL": self.claude_model.url,
            "ANTHROPIC_API_KEY": claude.DUMMY_KEY,
            **claude.QUIET,
            "GEMINI_API_KEY": "stand-in-key",
            "GOOGLE_GEMINI_BASE_URL": self.gemini_model.url,
            "CODEX_HOME": str(self.home),
            codex.KEY_VARIABLE: codex.DUMMY_KEY,
            "NO_COLOR": "1",
            "EVIDENCIA_URL": self.loop.connect.api.base_url,
            "EVIDENCIA_TOKEN": self.token,
            **self.extra_env,
        }

    def run(
        self,
        prompt: str,
        *,
        title: str | None = None,
        session_id: str | None = None,
        args: tuple[str, ...] = ("--output-format", "json"),
        as_json: bool = False,
        agent_args: Sequence[str] | None = None,
    ) -> Launched:
        """Launch with `-p PROMPT ARGS` for the agent, or `agent_args` when given."""
        session = session_id or str(uuid.uuid4())
        before = set(self.records.iterdir())
        argv = ["--org", self.loop.connect.org, "--agent", AGENT]
        argv += ["--title", title] if title else []
        argv += ["--json"] if as_json else []
        argv += ["--", *(["-p", prompt, *args] if agent_args is None else agent_args)]
        stderr = io.StringIO()
        code = launch.main(
            argv, environ=self.environment(), stderr=stderr, cwd=self.work, new_id=lambda: session
        )
        records = [json.loads(p.read_text()) for p in sorted(set(self.records.iterdir()) - before)]
        return Launched(code, stderr.getvalue(), session, records)

    def codex_stand_in(self) -> None:
        """Codex is the stand-in from now on."""
        self.extra_env["EVIDENCIA_CODEX"] = str(self.bin / "codex-stand-in")

    def instruct(self, body: dict[str, Any]) -> int:
        """A new version of the agent's standing instructions, PUT through HTTP by its
        admin (`{text}`, or a rollback `{fromVersion}`); its version."""
        connect = self.loop.connect
        reply = connect.api.call("PUT", connect.path("/instructions"), body, token=connect.admin)
        assert reply.status_code == 200, reply.text
        version: int = reply.json()["version"]
        return version

    def choose(self, selection: dict[str, Any]) -> None:
        """Configure the agent's selection anew."""
        reply = self.loop.connect.configure(selection)
        assert reply.status_code == 201, reply.text

    def session(self, session_id: str) -> dict[str, Any]:
        return document(f"projects/{self.loop.project}/sessions/{session_id}")

    def session_exists(self, session_id: str) -> bool:
        from shared.clients import db

        return bool(
            db().document(f"projects/{self.loop.project}/sessions/{session_id}").get().exists
        )

    def settled_analysis(self, session_id: str) -> dict[str, Any]:
        analysis = self.session(session_id)["analysis_id"]
        api, path = self.loop.connect.api, f"/projects/{self.loop.project}/analyses/{analysis}"

        def settled() -> dict[str, Any] | None:
            body: dict[str, Any] = api.call("GET", path, token=self.loop.logger).json()
            return body if body["status"] in ("completed", "failed") else None

        result: dict[str, Any] = wait_for(settled)
        return result


def events_of(project: str, session_id: str) -> list[dict[str, Any]]:
    """The events stored for a session of the project."""
    from functions.psychologist import store

    events: list[dict[str, Any]] = []
    for chunk in store.event_chunks(project, session_id).stream():
        events.extend(json.loads((chunk.to_dict() or {})["events_json"]))
    return events


def session_exists(project: str, session_id: str) -> bool:
    from shared.clients import db

    return bool(db().document(f"projects/{project}/sessions/{session_id}").get().exists)


def codex_stand_in(bin_dir: Path, records: Path) -> None:
    script = bin_dir / "codex-stand-in"
    script.write_text(
        CODEX_STAND_IN.format(
            python=sys.executable, records=str(records), samples=str(CODEX_SAMPLES)
        )
    )
    script.chmod(0o755)


def wrap(bin_dir: Path, name: str, real: Path, records: Path) -> None:
    script = bin_dir / name
    script.write_text(
        WRAPPER.format(python=sys.executable, name=name, records=str(records), real=str(real))
    )
    script.chmod(0o755)


def session_in(arm: str, trial: str, share: float = 0.5) -> str:
    """A new session id that the trial assigns to `arm`."""
    while True:
        candidate = str(uuid.uuid4())
        if str(arm_of(trial, candidate, share)) == arm:
            return candidate


def plain_text(text: str) -> Callable[[Recorded], Reply]:
    return lambda _recorded: Reply(text=text)


@pytest.fixture
def launcher(
    loop: Loop,
    anthropic: AnthropicTestServer,
    gemini_model: GeminiTestServer,
    openai_model: OpenAITestServer,
    tmp_path: Path,
) -> Iterator[Launch]:
    """The launched selection configured and linked, the stand-ins reset, the wrappers on
    PATH, and a token with both capabilities for a member of the org and the project."""
    connect = loop.connect
    assert connect.configure(LAUNCHED).status_code == 201
    assert loop.link().status_code == 200
    world = connect.world
    world.member(connect.org, "lee", "member")
    world.member(loop.project, "lee", "member")
    token, _ = world.token("lee", capabilities=BOTH)
    anthropic.reset()
    gemini_model.reset()
    gemini_model.respond_with(plain_text("Done."))
    openai_model.reset()
    home, records, bin_dir, work = (tmp_path / name for name in ("home", "rec", "bin", "work"))
    for folder in (home, records, bin_dir, work):
        folder.mkdir()
    gemini.write_settings(home, None)
    codex.write_config(home, openai_model.url, None)
    wrap(bin_dir, "claude", claude.ensure_installed(), records)
    wrap(bin_dir, "gemini", gemini.gemini_cli(), records)
    wrap(bin_dir, "codex", codex.codex_cli(), records)
    codex_stand_in(bin_dir, records)
    yield Launch(loop, token, anthropic, gemini_model, openai_model, home, records, bin_dir, work)
    openai_model.reset()
    gemini_model.reset()
    anthropic.reset()
