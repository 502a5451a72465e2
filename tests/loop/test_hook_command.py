"""`evidencia hooks install|uninstall|status` and `evidencia hook RUNTIME EVENT`, run in this
process against the local host, as the agents run them (the real agents run them in
`tests/loop/test_hooks.py`): what install writes and takes out, what the hook answers each
event, and what it does when Evidencia is away."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli import hook, hooks
from tests.agentconnect.conftest import AGENT
from tests.loop.launched import BOTH, LAUNCHED, events_of, session_in
from tests.loop.linked import AGENT_NAME, Loop
from tests.loop.tried import Tried

STANDING = "Run the tests you touched before you say a task is done."
SUGGESTION = "Add an explicit definition-of-done criterion to the instruction."


class Person:
    """A person's HOME with Evidencia's settings for the linked agent."""

    def __init__(self, loop: Loop, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.loop, self.home, self.monkeypatch = loop, home, monkeypatch
        world = loop.connect.world
        world.member(loop.connect.org, "dev", "member")
        world.member(loop.project, "dev", "member")
        self.token, _ = world.token("dev", capabilities=BOTH)
        for name, value in {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "EVIDENCIA_URL": loop.connect.api.base_url,
            "EVIDENCIA_TOKEN": self.token,
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("EVIDENCIA_HOME", raising=False)
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)

    @property
    def settings(self) -> Path:
        return self.home / ".claude" / "settings.json"

    def hooks(self, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
        code = hooks.main(list(args))
        said = capsys.readouterr()
        return code, said.out, said.err

    def install(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, err = self.hooks(
            "install",
            "claude-code",
            "--org",
            self.loop.connect.org,
            "--agent",
            AGENT,
            capsys=capsys,
        )
        assert code == 0, err

    def hook(self, event: str, said: dict[str, Any], runtime: str = "claude-code") -> str:
        self.monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(said)))
        return hook.answer([runtime, event], time.monotonic() + hook.DEADLINE_S)


@pytest.fixture
def person(loop: Loop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Person:
    assert loop.connect.configure(LAUNCHED).status_code == 201
    assert loop.link().status_code == 200
    return Person(loop, tmp_path / "home", monkeypatch)


def instruct(loop: Loop) -> None:
    connect = loop.connect
    reply = connect.api.call(
        "PUT", connect.path("/instructions"), {"text": STANDING}, connect.admin
    )
    assert reply.status_code == 200, reply.text


def context_of(printed: str) -> str:
    said = json.loads(printed)["hookSpecificOutput"]
    assert said["hookEventName"] in hook.EVENTS["claude-code"] | hook.EVENTS["codex"]
    text: str = said["additionalContext"]
    return text


def test_install_keeps_the_persons_settings_and_the_token_out_of_them(
    person: Person, capsys: pytest.CaptureFixture[str]
) -> None:
    person.settings.parent.mkdir(parents=True)
    person.settings.write_text('{"theme": "dark", "env": {"MINE": "1"}}')
    person.install(capsys)
    written = json.loads(person.settings.read_text())
    assert (written["theme"], written["env"]["MINE"]) == ("dark", "1")
    [group] = written["hooks"]["SessionStart"]
    assert group["matcher"] == hooks.MATCHER
    assert group["hooks"][0]["command"].endswith("hook claude-code SessionStart")
    assert written["env"]["OTEL_RESOURCE_ATTRIBUTES"] == f"gen_ai.agent.name={AGENT_NAME}"
    assert written["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"].endswith(
        f"/projects/{person.loop.project}/otlp"
    )
    assert written["otelHeadersHelper"].endswith("hook claude-code otel-headers")
    assert person.token not in person.settings.read_text()
    headers = person.hook("otel-headers", {})
    assert json.loads(headers) == {"Authorization": f"Bearer {person.token}"}

    code, out, _ = person.hooks("status", "--json", capsys=capsys)
    found = json.loads(out)["claude-code"]
    assert (code, found["org"], found["agent"], found["runs"]) == (
        0,
        person.loop.connect.org,
        AGENT,
        True,
    )
    code, out, _ = person.hooks("status", capsys=capsys)
    assert "runs at each session start" in out


def test_a_setting_the_person_has_with_another_value_is_refused_and_nothing_is_written(
    person: Person, capsys: pytest.CaptureFixture[str]
) -> None:
    person.settings.parent.mkdir(parents=True)
    mine = '{"env": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}}'
    person.settings.write_text(mine)
    code, _, err = person.hooks(
        "install", "claude-code", "--org", person.loop.connect.org, "--agent", AGENT, capsys=capsys
    )
    assert code == hooks.FAILED
    assert "already sets env.OTEL_EXPORTER_OTLP_ENDPOINT" in err
    assert person.settings.read_text() == mine
    assert not hook.settings_file().exists()


def test_uninstall_after_the_person_changed_the_file_takes_out_only_what_install_wrote(
    person: Person, capsys: pytest.CaptureFixture[str]
) -> None:
    person.install(capsys)
    changed = json.loads(person.settings.read_text())
    changed["model"] = "opus"
    changed["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "say done"}]}]
    person.settings.write_text(json.dumps(changed))
    code, out, _ = person.hooks("uninstall", "claude-code", capsys=capsys)
    assert code == 0
    assert "changed since" in out
    assert json.loads(person.settings.read_text()) == {
        "model": "opus",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
    }
    code, out, _ = person.hooks("uninstall", "claude-code", capsys=capsys)
    assert "nothing installed" in out


def test_print_writes_nothing_and_shows_the_entries_for_managed_settings(
    person: Person, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = person.hooks(
        "install",
        "claude-code",
        "--org",
        person.loop.connect.org,
        "--agent",
        AGENT,
        "--print",
        capsys=capsys,
    )
    assert code == 0
    printed, _ = json.JSONDecoder().raw_decode(out[out.index("{\n") :])  # after the host's log
    assert "SessionStart" in printed["hooks"]
    assert not person.settings.exists()
    assert not hook.settings_file().exists()


def test_install_needs_the_url_and_token_and_an_agent_it_can_read(
    person: Person, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("install", "claude-code", "--org", person.loop.connect.org, "--agent", AGENT)
    monkeypatch.setenv("EVIDENCIA_TOKEN", "evd_not-a-token")
    code, _, err = person.hooks(*args, capsys=capsys)
    assert (code, "refused reading the agent's link (401)" in err) == (hooks.FAILED, True)
    monkeypatch.setenv("EVIDENCIA_URL", "file:///etc/passwd")
    code, _, err = person.hooks(*args, capsys=capsys)
    assert "must be an http or https URL" in err
    monkeypatch.delenv("EVIDENCIA_TOKEN")
    code, _, err = person.hooks(*args, capsys=capsys)
    assert "EVIDENCIA_URL and EVIDENCIA_TOKEN must be set" in err
    assert not person.settings.exists()


def test_each_start_registers_its_arm_once_and_a_first_prompt_after_it_adds_nothing(
    person: Person, tried: Tried, capsys: pytest.CaptureFixture[str]
) -> None:
    instruct(person.loop)
    trial = tried.start_trial(share=0.5).json()["id"]
    person.install(capsys)
    treated, control = session_in("treatment", trial), session_in("control", trial)
    assert context_of(
        person.hook("SessionStart", {"session_id": treated, "source": "startup"})
    ) == (f"{STANDING}\n\n{SUGGESTION}")
    assert context_of(person.hook("SessionStart", {"session_id": control})) == STANDING
    again = person.hook("SessionStart", {"session_id": treated, "source": "compact"})
    assert context_of(again) == f"{STANDING}\n\n{SUGGESTION}", "compacted: given again"
    # Codex: the first prompt after a start that injected adds nothing, and asks nothing
    codex_start = person.hook("SessionStart", {"session_id": treated}, runtime="codex")
    assert context_of(codex_start) == f"{STANDING}\n\n{SUGGESTION}"
    assert person.hook("UserPromptSubmit", {"session_id": treated}, runtime="codex") == ""
    first_prompt = session_in("treatment", trial)
    said = person.hook("UserPromptSubmit", {"session_id": first_prompt}, runtime="codex")
    assert context_of(said) == f"{STANDING}\n\n{SUGGESTION}", "no start before it: it injects"
    api = tried.loop.connect.api
    read = api.call("GET", tried.path(f"/trials/{trial}"), token=tried.admin).json()
    assert read["arms"]["treatment"]["assigned"] == read["arms"]["treatment"]["handStarted"] == 2
    assert read["arms"]["control"]["handStarted"] == 1
    # The selection report counts them apart: no target ran them, none is missing a log.
    report = person.loop.report()
    assert report["sessions"]["handStarted"] == 3
    assert (report["sessions"]["recorded"], report["sessions"]["notJoined"]) == (0, 0)
    assert report["targets"] == []


def test_an_agent_with_no_instructions_and_no_trial_is_given_nothing(
    person: Person, capsys: pytest.CaptureFixture[str]
) -> None:
    person.install(capsys)
    assert person.hook("SessionStart", {"session_id": "s-plain"}) == ""
    assert person.hook("SessionStart", {}) == "", "no session id: nothing registered"
    assert person.hook("SessionStart", {"session_id": "../../x"}) == "", "not a session id"
    assert not (hook.home() / "unassigned.jsonl").exists()
    assert person.hook("Stop", {"session_id": "s-plain"}) == "", "not an event it handles"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for each in held:
        each.close()
    listener.close()


def test_with_evidencia_away_the_cached_instructions_are_given_and_the_session_reported_later(
    person: Person, capsys: pytest.CaptureFixture[str], silent_port: int
) -> None:
    instruct(person.loop)
    person.install(capsys)
    assert context_of(person.hook("SessionStart", {"session_id": "s-warm"})) == STANDING
    kept = json.loads(hook.settings_file().read_text())
    reachable = kept["url"]
    kept["url"] = f"http://127.0.0.1:{silent_port}"
    hook.write_private(hook.settings_file(), kept)
    assert context_of(person.hook("SessionStart", {"session_id": "s-away"})) == STANDING
    kept["url"] = reachable
    hook.write_private(hook.settings_file(), kept)

    assert context_of(person.hook("SessionStart", {"session_id": "s-back"})) == STANDING
    [started] = events_of(person.loop.project, "s-away")
    assert started["type"] == "session.started"
    assert started["data"] == {"startedBy": "hook", "assigned": False, "runtime": "claude-code"}
    assert (hook.home() / "unassigned.jsonl").read_text() == ""

    # A token refused is Evidencia away too; a kept session the API refuses for good
    # (here, an id no longer valid) is dropped, not kept in front of the others forever.
    kept = json.loads(hook.settings_file().read_text())
    kept["token"] = "evd_revoked"
    hook.write_private(hook.settings_file(), kept)
    assert context_of(person.hook("SessionStart", {"session_id": "s-refused"})) == STANDING
    queue = hook.home() / "unassigned.jsonl"
    bad = {"sessionId": "x" * 200, "runtime": "claude-code", "at": time.time()}
    queue.write_text(json.dumps(bad) + "\n" + queue.read_text())
    kept["token"] = person.token
    hook.write_private(hook.settings_file(), kept)
    person.hook("SessionStart", {"session_id": "s-back-again"})
    assert queue.read_text() == ""
    assert [e["type"] for e in events_of(person.loop.project, "s-refused")] == ["session.started"]


def test_the_hook_says_nothing_when_nothing_is_installed_or_its_input_is_not_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIDENCIA_HOME", str(tmp_path))
    monkeypatch.setattr("sys.stdin", io.StringIO("{"))
    assert hook.answer(["claude-code", "SessionStart"], time.monotonic() + 2) == ""
    hook.write_private(hook.settings_file(), {"url": "http://127.0.0.1:9", "token": "t"})
    assert hook.answer(["claude-code", "SessionStart"], time.monotonic() + 2) == ""
    assert hook.answer([], time.monotonic() + 2) == ""
