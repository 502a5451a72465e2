"""The real Codex CLI (`tests/agents/codex.py`, npm-locked) sends its own telemetry, logs
and traces, to the OTLP endpoints as docs/otlp.md tells its users to, while the Responses
stand-in we own (`cli.openai_stand_in`) makes it run a shell command that fails. Its
`codex.tool_result` says `success: "true"` for a failed command and only its output says
the exit code; read back, the failures are counted, the tokens are what the stand-in
reported, the session is Codex's own conversation, and a run killed mid-turn ends
abnormally."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.openai_stand_in import OpenAITestServer
from functions.psychologist import store
from tests.agents.codex import Telemetry, codex_cli, environment, run_codex, write_config
from tests.api import Configure, document, wait_for
from tests.psychologist.conftest import Psychologist

FAILING = "echo failing >&2; exit 2"


@pytest.fixture(scope="module")
def openai() -> Iterator[OpenAITestServer]:
    codex_cli()
    server = OpenAITestServer().start()
    yield server
    server.stop()


@pytest.fixture
def model(openai: OpenAITestServer) -> OpenAITestServer:
    openai.reset()
    return openai


def exported_to(psy: Psychologist) -> Telemetry:
    """Codex's telemetry to the project, the bearer in its exporters' headers."""
    return Telemetry(
        f"{psy.api.base_url}/projects/{psy.project}/otlp",
        headers={"Authorization": f"Bearer {psy.member}"},
    )


def test_three_failing_commands_are_three_tool_errors_with_tokens_as_the_model_reported(
    psy: Psychologist, model: OpenAITestServer, tmp_path: Path
) -> None:
    for _ in range(3):
        model.run_command(FAILING)
    model.answer_text("It failed three times with exit code 2.")
    run = run_codex(
        "Run the failing command three times.",
        base_url=model.url,
        home=tmp_path,
        telemetry=exported_to(psy),
    )
    assert run.process.returncode == 0, run.process.stderr[-2000:]
    assert [item["exit_code"] for item in run.completed("command_execution")] == [2, 2, 2]
    session_id = run.thread_id
    assert session_id is not None
    session = wait_for(
        lambda: (
            (document(f"projects/{psy.project}/sessions/{session_id}") or {}).get("tool_errors")
            == 3
            and document(f"projects/{psy.project}/sessions/{session_id}")
        )
    )
    assert session["source"] == "codex"
    reported = model.reported
    assert len(reported) == 4
    assert session["usage"] == {
        "input_tokens": sum(usage["input_tokens"] for usage in reported),
        "output_tokens": sum(usage["output_tokens"] for usage in reported),
        "cached_tokens": sum(usage["input_tokens_details"]["cached_tokens"] for usage in reported),
    }
    errors = [event for event in psy.current_events(session_id) if event["type"] == "tool.error"]
    assert [event["data"]["error"] for event in errors] == ["exit code 2"] * 3
    assert session["turns"]["open"] == []


def test_a_codex_run_killed_mid_turn_ends_abnormally_as_a_turn_that_never_closed(
    psy: Psychologist, model: OpenAITestServer, configure: Configure, tmp_path: Path
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="2")
    model.run_command("sleep 20")
    write_config(tmp_path, model.url, exported_to(psy))
    workdir = tmp_path / "work"
    workdir.mkdir()
    command = [str(codex_cli()), "exec", "--json", "--skip-git-repo-check", "Wait a while."]
    agent = subprocess.Popen(
        command,
        cwd=workdir,
        env=environment(tmp_path, None),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert agent.stdout is not None
        started = agent.stdout.readline()
        session_id = started.split('"thread_id":"')[1].split('"')[0]
        opened = wait_for(lambda: open_turns(psy, session_id), timeout=60)
        assert len(opened) == 1
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait(timeout=30)
        if agent.stdout is not None:
            agent.stdout.close()
    assert wait_for(lambda: psy.sweep()["sessions"]) == [session_id]
    ended = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (ended["state"], ended["cause"]) == ("closed_abnormally", "turn_never_closed")


def open_turns(psy: Psychologist, session_id: str) -> list[str]:
    found = store.session_ref(psy.project, session_id).get().to_dict() or {}
    turns: list[str] = found.get("turns", {}).get("open", [])
    return turns
