"""`evidencia launch` runs the real Claude Code and Gemini CLI (npm-locked) behind recording
wrappers, against the model stand-ins and the real API, emulator and workers: the agent
runs with what AgentConnect chose, a treatment arm's suggestion reaches its model, its own
telemetry lands in the linked project under the linked agent name, and its session ends
as the agent exited."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cli import launch
from cli.launch import CLAUDE_CODE, GEMINI_CLI, RUNTIMES, UnsupportedTargetError
from tests.agentconnect.conftest import AGENT
from tests.api import wait_for
from tests.loop.launched import (
    CLAUDE_TARGET,
    GEMINI_TARGET,
    Launch,
    anthropic,
    gemini_model,
    launcher,
    session_in,
)
from tests.loop.linked import key
from tests.loop.tried import Tried

__all__ = ["anthropic", "gemini_model", "launcher"]

SUGGESTION = "Add an explicit definition-of-done criterion to the instruction."


def events_of(launch_: Launch, session_id: str) -> list[dict[str, Any]]:
    from functions.psychologist import store

    events: list[dict[str, Any]] = []
    for chunk in store.event_chunks(launch_.loop.project, session_id).stream():
        events.extend(json.loads((chunk.to_dict() or {})["events_json"]))
    return events


def test_claude_code_runs_as_chosen_with_the_treatment_suggestion_and_ends_closed(
    launcher: Launch, tried: Tried
) -> None:
    trial = tried.start_trial(share=0.5).json()["id"]
    launcher.claude_model.use_tool("Bash", {"command": "echo checked"})
    launcher.claude_model.answer_text("Done.")
    session = session_in("treatment", trial)

    ran = launcher.run("Fix the flaky test.", title="deep refactor", session_id=session)

    assert ran.code == 0, ran.stderr
    assert ran.flag("--model") == CLAUDE_TARGET["model"]
    assert ran.flag("--effort") == "high"
    assert ran.flag("--permission-mode") == "bypassPermissions"
    assert ran.flag("--fast-mode") == "off"
    assert ran.flag("--session-id") == session
    assert ran.flag("--append-system-prompt") == SUGGESTION
    assert not any(launcher.token in arg for arg in ran.argv), "the bearer is never in argv"
    assert "OTEL_EXPORTER_OTLP_HEADERS" in ran.records[0]["env"]
    assert "EVIDENCIA_TOKEN" not in ran.records[0]["env"]
    main = [r for r in launcher.claude_model.requests if r.main]
    assert {r.model for r in main} == {CLAUDE_TARGET["model"]}
    assert all(SUGGESTION in r.system for r in main)
    assert all(r.body.get("output_config", {}).get("effort") == "high" for r in main)
    [summary] = [line for line in ran.stderr.splitlines() if "by rule" in line]
    assert f"trial {trial} treatment" in summary
    assert f"telemetry to project {launcher.loop.project} as dev-api" in summary

    stored = launcher.session(session)
    assert (stored["state"], stored["cause"]) == ("closed", None)
    assert (stored["source"], stored["agents"]) == ("claude-code", ["dev-api"])
    events = events_of(launcher, session)
    assert {"session.started", "tool.call", "model.chat"} <= {e["type"] for e in events}
    assert all(e["agent"] == "dev-api" for e in events)
    assert stored["usage"]["cost_usd"] > 0, "the agent's own telemetry counted its cost"
    assert launcher.settled_analysis(session)["trigger"] == "session_end"


def test_a_control_session_runs_with_nothing_added_to_its_instructions(
    launcher: Launch, tried: Tried
) -> None:
    trial = tried.start_trial(share=0.5).json()["id"]
    launcher.claude_model.answer_text("Done.")

    ran = launcher.run("Fix it.", title="deep dive", session_id=session_in("control", trial))

    assert ran.code == 0, ran.stderr
    assert "--append-system-prompt" not in ran.argv
    main = [r for r in launcher.claude_model.requests if r.main]
    assert main
    assert not any(SUGGESTION in r.system for r in main)
    assert f"trial {trial} control" in ran.stderr


def test_a_run_the_model_refuses_ends_abnormally_with_the_agents_exit_code(
    launcher: Launch,
) -> None:
    """Refused every time (Claude Code 2.1.332 tries a 400 a few times), Claude Code exits
    1 and Gemini CLI (JSON output) 144; the launcher ends each session with that code and
    exits with it."""
    launcher.claude_model.fail(400, times=10)
    claude_run = launcher.run("Fix it.", title="deep change")
    launcher.gemini_model.fail(400)
    gemini_run = launcher.run("Fix it.", title="small change")

    for ran, code in ((claude_run, 1), (gemini_run, 144)):
        assert ran.code == code, ran.stderr
        stored = launcher.session(ran.session_id)
        assert (stored["state"], stored["cause"]) == ("closed_abnormally", f"exit_code_{code}")
        assert f"ended closed_abnormally (exit_code_{code})" in ran.stderr


def test_gemini_cli_runs_with_its_own_approval_mode_and_says_what_it_cannot_apply(
    launcher: Launch, tried: Tried
) -> None:
    """bypassPermissions is Gemini CLI's yolo; it has no effort setting, which the summary
    says; a treatment session's suggestion reaches the model in a context file of its own
    (nothing is written into the user's files), a control session's does not."""
    trial = tried.start_trial(share=0.5).json()["id"]
    user_files = {p: p.stat().st_mtime for p in launcher.home.rglob("*") if p.is_file()}

    seen: dict[str, bool] = {}
    for arm in ("treatment", "control"):
        before = len(launcher.gemini_model.requests)
        ran = launcher.run("Fix it.", title="small fix", session_id=session_in(arm, trial))
        assert ran.code == 0, ran.stderr
        assert ran.flag("--model") == GEMINI_TARGET["model"]
        assert ran.flag("--approval-mode") == "yolo"
        assert ran.flag("--session-id") == ran.session_id
        assert "--effort" not in ran.argv
        assert "effort medium: Gemini CLI has no effort setting, not applied" in ran.stderr
        main = [r for r in launcher.gemini_model.requests[before:] if r.purpose is None]
        assert {r.model for r in main} == {GEMINI_TARGET["model"]}
        seen[arm] = any(SUGGESTION in json.dumps(r.body) for r in main)
        stored = launcher.session(ran.session_id)
        assert (stored["state"], stored["source"]) == ("closed", "gemini-cli")
    assert seen == {"treatment": True, "control": False}
    assert not list(launcher.work.iterdir()), "nothing written where the agent works"
    for path, mtime in user_files.items():
        assert path.stat().st_mtime == mtime, f"{path} was changed"


def test_a_missing_runtime_ends_the_session_runtime_unavailable_and_runs_nothing(
    launcher: Launch,
) -> None:
    launcher.extra_env["EVIDENCIA_CLAUDE"] = str(launcher.bin / "no-such-claude")

    ran = launcher.run("Fix it.", title="deep fix")

    assert ran.code == launch.NOT_INSTALLED
    assert ran.records == []
    assert launcher.claude_model.requests == []
    stored = launcher.session(ran.session_id)
    assert (stored["state"], stored["cause"]) == ("closed_abnormally", "runtime_unavailable")
    assert "is not executable" in ran.stderr


def test_a_choice_not_frozen_in_time_runs_nothing(launcher: Launch) -> None:
    from shared.clients import db

    gate = launcher.loop.connect.world.gemini.held_answer_json({"value": True, "probability": 1})
    launcher.extra_env["EVIDENCIA_LAUNCH_WAIT_S"] = "1"
    try:
        ran = launcher.run("Fix it.", title="deep fix")
    finally:
        gate.open()

    assert ran.code == launch.API_FAILED
    assert "was not frozen within 1 s" in ran.stderr
    assert ran.records == []
    path = f"projects/{launcher.loop.project}/sessions/{ran.session_id}"
    assert not db().document(path).get().exists


def test_no_outcome_source_runs_without_telemetry_and_says_so(launcher: Launch) -> None:
    assert launcher.loop.connect.api.call(
        "DELETE", launcher.loop.connect.path("/outcome-source"), token=launcher.loop.connect.admin
    ).ok
    launcher.claude_model.answer_text("Done.")

    ran = launcher.run("Fix it.", title="deep fix", as_json=True)

    assert ran.code == 0
    env = set(ran.records[0]["env"])
    assert not env & {"OTEL_EXPORTER_OTLP_HEADERS", "CLAUDE_CODE_ENABLE_TELEMETRY"}
    said = [json.loads(line) for line in ran.stderr.splitlines()]
    launched = next(line for line in said if line["event"] == "launched")
    assert (launched["telemetry"], launched["route"]) == (None, "rule")
    ended = next(line for line in said if line["event"] == "ended")
    assert (ended["state"], ended["logged"]) == ("closed", False)


def test_sigterm_to_the_launcher_reaches_the_agent_and_ends_the_session_by_it(
    launcher: Launch, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    agent = tmp_path / "agent"
    agent.write_text(
        f"#!{sys.executable}\nimport pathlib, time\n"
        f"pathlib.Path({str(started)!r}).write_text('up')\ntime.sleep(60)\n"
    )
    agent.chmod(0o755)
    env = {**launcher.environment(), "EVIDENCIA_CLAUDE": str(agent)}
    session = str(uuid.uuid4())
    command = [sys.executable, "-c", LAUNCH_WITH_ID, session, "--org", launcher.loop.connect.org]
    command += ["--agent", AGENT, "--title", "deep fix", "--", "-p", "Fix it."]
    process = subprocess.Popen(command, env=env, cwd=launcher.work, stderr=subprocess.PIPE)
    try:
        wait_for(started.exists, timeout=60)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    stored = launcher.session(session)
    assert (stored["state"], stored["cause"]) == ("closed_abnormally", "signal_sigterm")


LAUNCH_WITH_ID = (
    "import sys\nfrom cli import launch\n"
    "session = sys.argv[1]\n"
    "sys.exit(launch.main(sys.argv[2:], new_id=lambda: session))\n"
)
"""`evidencia launch` in a process of its own, under a session id the test knows."""


def test_a_dozen_launched_sessions_are_joined_per_target_and_counted_in_their_arms(
    launcher: Launch, tried: Tried
) -> None:
    """Six sessions per target, under a running trial: the selection report joins every
    one under the target that ran it, and the trial counts each in the arm it was given."""
    trial = tried.start_trial(share=0.5).json()["id"]
    arms: dict[str, int] = {"treatment": 0, "control": 0}
    for index in range(12):
        deep = index % 2 == 0
        if deep:
            launcher.claude_model.answer_text("Done.")
        ran = launcher.run("Fix it.", title="deep fix" if deep else "small fix", as_json=True)
        assert ran.code == 0, ran.stderr
        said = [json.loads(line) for line in ran.stderr.splitlines()]
        launched = next(line for line in said if line["event"] == "launched")
        assert launched["target"] == (CLAUDE_TARGET if deep else GEMINI_TARGET)
        [assigned] = launched["trials"]
        assert assigned["trialId"] == trial
        arms[assigned["arm"]] += 1
        launcher.settled_analysis(ran.session_id)  # its outcome record is written as it settles

    report = launcher.loop.report()
    assert report["sessions"]["joined"] == 12, report["sessions"]
    by_target = {entry["targetKey"]: entry["sessions"] for entry in report["targets"]}
    assert by_target == {key(CLAUDE_TARGET): 6, key(GEMINI_TARGET): 6}
    read = launcher.loop.connect.api.call(
        "GET", tried.path(f"/trials/{trial}"), token=tried.admin
    ).json()
    for arm, count in arms.items():
        assert read["arms"][arm]["sessions"] == count
        assert read["arms"][arm]["lost"] == 0


# -- the mapping table, pure ------------------------------------------------------------


def gemini_with(mode: str) -> dict[str, Any]:
    return {**GEMINI_TARGET, "permissionMode": mode}


@pytest.mark.pure
def test_gemini_cli_takes_each_permission_mode_as_its_own_approval_mode() -> None:
    modes = {
        mode: launch.agent_command(
            GEMINI_CLI, "gemini", {**GEMINI_TARGET, "permissionMode": mode}, "s"
        )[0]
        for mode in ("default", "acceptEdits", "bypassPermissions", "plan")
    }
    approval = {mode: argv[argv.index("--approval-mode") + 1] for mode, argv in modes.items()}
    assert approval == {
        "default": "default",
        "acceptEdits": "auto_edit",
        "bypassPermissions": "yolo",
        "plan": "plan",
    }


@pytest.mark.pure
def test_a_permission_mode_with_no_equal_is_refused_never_raised() -> None:
    narrow = replace(GEMINI_CLI, permission_modes={"plan": "plan", "bypassPermissions": "yolo"})
    with pytest.raises(UnsupportedTargetError, match="no permission mode equal to acceptEdits"):
        launch.agent_command(
            narrow, "gemini", {**GEMINI_TARGET, "permissionMode": "acceptEdits"}, "s"
        )
    with pytest.raises(UnsupportedTargetError, match="not ultra"):
        launch.agent_command(CLAUDE_CODE, "claude", {**CLAUDE_TARGET, "effort": "ultra"}, "s")


@pytest.mark.pure
def test_claude_code_takes_every_setting_as_a_flag() -> None:
    argv, not_applied = launch.agent_command(
        CLAUDE_CODE, "claude", {**CLAUDE_TARGET, "fastMode": True}, "s-1"
    )
    assert argv == [
        "claude", "--model", "claude-sonnet-4-6", "--permission-mode", "bypassPermissions",
        "--session-id", "s-1", "--effort", "high", "--fast-mode", "on",
    ]  # fmt: skip
    assert not_applied == []
    _, gemini_not_applied = launch.agent_command(
        GEMINI_CLI, "gemini", {**GEMINI_TARGET, "fastMode": True}, "s-1"
    )
    assert gemini_not_applied == [
        "effort medium: Gemini CLI has no effort setting",
        "fast mode: Gemini CLI has no fast mode",
    ]


@pytest.mark.pure
@pytest.mark.parametrize(
    "arg",
    ["--model", "--model=opus", "-m", "--effort", "--permission-mode", "--yolo", "-y",
     "--approval-mode=yolo", "--session-id", "--resume", "--dangerously-skip-permissions",
     "--fast-mode", "--telemetry-otlp-endpoint=http://x"],
)  # fmt: skip
def test_an_argument_overriding_a_chosen_setting_is_refused_in_one_sentence(arg: str) -> None:
    said = launch.refused_argument(["-p", "Fix it.", arg], list(RUNTIMES.values()))
    assert said is not None
    assert said.startswith(f"{arg.split('=', maxsplit=1)[0]} is refused")
    assert said.count(".") == 1
    assert said.endswith(".")


@pytest.mark.pure
def test_arguments_that_choose_nothing_pass() -> None:
    args = ["-p", "--model is a word here", "--output-format", "json", "--allowedTools", "Bash"]
    assert launch.refused_argument(args, list(RUNTIMES.values())) is None


@pytest.mark.pure
def test_the_bearer_is_in_the_exporters_header_only_and_the_agent_name_in_the_resource() -> None:
    base = {
        "PATH": "/bin",
        "EVIDENCIA_TOKEN": "tok",
        "OTEL_RESOURCE_ATTRIBUTES": "team=a,gen_ai.agent.name=x",
        "CLAUDE_CODE_EFFORT_LEVEL": "max",
    }
    telemetry = launch.Telemetry("http://h", "p1", "dev-api")
    env = launch.agent_environment(base, CLAUDE_CODE, telemetry, "tok")
    assert [name for name, value in env.items() if "tok" in value] == ["OTEL_EXPORTER_OTLP_HEADERS"]
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == "Authorization=Bearer tok"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://h/projects/p1/otlp"
    assert env["OTEL_RESOURCE_ATTRIBUTES"] == "team=a,gen_ai.agent.name=dev-api"
    assert "CLAUDE_CODE_EFFORT_LEVEL" not in env, "it would override the chosen effort"
    gemini_env = launch.agent_environment(base, GEMINI_CLI, telemetry, "tok")
    assert gemini_env["GEMINI_TELEMETRY_OTLP_ENDPOINT"] == "http://h/projects/p1/otlp"
    assert launch.agent_environment(base, CLAUDE_CODE, None, "tok") == {
        "PATH": "/bin",
        "OTEL_RESOURCE_ATTRIBUTES": "team=a,gen_ai.agent.name=x",
    }


@pytest.mark.pure
def test_the_end_and_the_route_say_what_happened() -> None:
    assert launch.end_of(0) == ("closed", None)
    assert launch.end_of(3) == ("closed_abnormally", "exit_code_3")
    assert launch.end_of(-signal.SIGINT) == ("closed_abnormally", "signal_sigint")
    assert launch.exit_status(-signal.SIGTERM) == 143
    assert launch.route_of({"outcome": "selected", "reason": "rule 1 held"}) == "rule"
    assert (
        launch.route_of({"outcome": "selected", "reason": "explored (share 0.1): ..."})
        == "explored"
    )
    assert launch.route_of({"outcome": "defaulted", "reason": ""}) == "default"
    assert launch.route_of({"outcome": "fallback", "reason": "budget_exhausted"}) == "fallback"


def test_a_session_start_the_api_refuses_shows_each_schema_issue_with_its_path(
    launcher: Launch,
) -> None:
    """A 400 once said "does not match its schema (1 issue(s))" and hid the issue."""
    ran = launcher.run("Fix it.", title="t" * 501)

    assert ran.code == launch.API_FAILED
    said = ran.stderr.splitlines()
    assert said[0].startswith("evidencia launch: Starting the AgentConnect session was refused")
    assert "does not match its schema (1 issue(s))" in said[0]
    assert said[1].startswith("  title: 'tttt")
    assert said[1].endswith("…")
    assert len(said[1]) <= 2 + len("title: ") + launch.ISSUE_CHARS
    assert ran.records == [], "no agent ran"
