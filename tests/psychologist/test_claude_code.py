"""The real Claude Code (`tests/agents/claude.py`, npm-locked) sends its own telemetry,
logs, metrics and traces, to the OTLP endpoints as its users configure it, while a model
stand-in we own (`cli.anthropic_stand_in`) makes it run a shell command that fails three
times. What it sent is read back through Firestore and the API: one session under its own
session id, each tool call once, the failures counted, every prompt's events, tokens and
cost equal to what the stand-in reported, and an end that tells the truth."""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.anthropic_stand_in import AnthropicTestServer
from functions.psychologist import store
from tests.agents.claude import ensure_installed, environment, run_claude, telemetry
from tests.api import Configure, document, wait_for
from tests.psychologist.conftest import Psychologist

AGENT = "builder"
FAILING = {"command": "ls /nonexistent-evidencia-folder"}


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicTestServer]:
    ensure_installed()
    server = AnthropicTestServer().start()
    yield server
    server.stop()


@pytest.fixture
def model(claude: AnthropicTestServer) -> AnthropicTestServer:
    claude.reset()
    return claude


def otel(psy: Psychologist, **faster: str) -> dict[str, str]:
    """Claude Code's telemetry settings as its docs give them, with the project's bearer."""
    settings = telemetry(
        f"{psy.api.base_url}/projects/{psy.project}/otlp", resource={"gen_ai.agent.name": AGENT}
    )
    return {
        **settings,
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {psy.member}",
        **faster,
    }


def open_turns(psy: Psychologist, session_id: str) -> list[str]:
    found = store.session_ref(psy.project, session_id).get().to_dict() or {}
    turns: list[str] = found.get("turns", {}).get("open", [])
    return turns


def test_two_prompts_land_in_one_session_with_each_failing_call_once_and_an_end_by_its_turns(
    psy: Psychologist, model: AnthropicTestServer, configure: Configure, tmp_path: Path
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="2")
    session_id = str(uuid.uuid4())
    for _ in range(3):
        model.use_tool("Bash", FAILING)
    model.answer_text("The folder does not exist.")
    first = run_claude(
        "List the folder.", base_url=model.url, home=tmp_path, session_id=session_id, env=otel(psy)
    )
    assert first.returncode == 0, first.stderr
    model.answer_text("Nothing else to do.")
    second = run_claude(
        "Anything else?", base_url=model.url, home=tmp_path, resume=session_id, env=otel(psy)
    )
    assert second.returncode == 0, second.stderr

    session = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (session["source"], session["agents"], session["state"]) == (
        "claude-code",
        [AGENT],
        "open",
    )
    assert session["tool_errors"] == 3
    turns = session["turns"]
    assert (turns["open"], len(turns["closed"]), turns["last"]["failed"]) == ([], 2, False)

    events = psy.stored_events(session_id)
    calls = {event["id"] for event in events if event["type"] in ("tool.call", "tool.error")}
    assert len(calls) == 3, "a call's log and spans are one event"
    prompts = [event for event in events if event["type"] == "prompt.submitted"]
    assert len(prompts) == 2
    failed = next(event for event in events if event["type"] == "tool.error")
    assert failed["data"]["tool"] == "Bash"
    assert failed["data"]["callId"].startswith("toolu_")
    merged = [event for event in events if event["id"] == failed["id"]]
    reports = set().union(*(event["data"]["reports"] for event in merged))
    assert "log:tool_result" in reports, reports
    assert any(report.startswith("span:") for report in reports), "its spans were merged in"
    latest = max(merged, key=lambda event: len(event["data"]["reports"]))
    said = latest["data"]["attributes"]
    assert said["permission_mode"] == "bypassPermissions", "the tool_decision log's"
    assert said["error_type"] == "ShellError", "the tool_result log's"
    assert said["gen_ai.tool.name"] == "Bash", "the tool span's"

    reported = model.reported
    usage = session["usage"]
    assert usage["output_tokens"] == sum(answer["output_tokens"] for answer in reported)
    assert usage["input_tokens"] == sum(
        answer["input_tokens"]
        + answer.get("cache_read_input_tokens", 0)
        + answer.get("cache_creation_input_tokens", 0)
        for answer in reported
    )
    assert usage["cost_usd"] > 0

    assert wait_for(lambda: psy.sweep()["sessions"]) == [session_id]
    ended = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (ended["state"], ended["cause"]) == ("closed", "turns_closed")
    analysis = psy.settled(ended["analysis_id"])
    assert analysis["trigger"] == "session_end", "silence after a finished run asks no model"
    assert analysis["sessionUsage"] == {
        "inputTokens": usage["input_tokens"],
        "outputTokens": usage["output_tokens"],
        "cachedTokens": usage["cached_tokens"],
        "costUsd": round(usage["cost_usd"], 6),
        "from": "requests",
    }


def test_a_run_killed_mid_turn_ends_abnormally_as_a_turn_that_never_closed(
    psy: Psychologist, model: AnthropicTestServer, configure: Configure, tmp_path: Path
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="2")
    session_id = str(uuid.uuid4())
    # Long enough to be killed in, short enough that the command Claude Code ran in a
    # session of its own (which its kill does not reach) ends soon after the test.
    model.use_tool("Bash", {"command": "python3 -c 'import time; time.sleep(20)'"})
    quick = {
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_LOGS_EXPORT_INTERVAL": "200",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
    }
    command = [str(ensure_installed()), "-p", "Wait a minute.", "--output-format", "json"]
    command += ["--permission-mode", "bypassPermissions", "--allowedTools", "Bash"]
    command += ["--session-id", session_id]
    env = environment(model.url, tmp_path, otel(psy, **quick))
    agent = subprocess.Popen(command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL)
    try:
        opened = wait_for(lambda: open_turns(psy, session_id), timeout=60)
        assert len(opened) == 1
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait(timeout=30)
    assert wait_for(lambda: psy.sweep()["sessions"]) == [session_id]
    ended = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (ended["state"], ended["cause"]) == ("closed_abnormally", "turn_never_closed")
