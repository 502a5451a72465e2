"""`evidencia launch` runs the real Claude Code and Gemini CLI (npm-locked) behind recording
wrappers, against the model stand-ins and the real API, emulator and workers: the agent
runs with what AgentConnect chose, the agent's standing instructions (the version served
at the start) and a treatment arm's suggestion reach its model, its own
telemetry lands in the linked project under the linked agent name, and its session ends
as the agent exited. Codex runs as a stand-in exporting a real capture through the relay;
its row's arguments are checked pure."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import tomllib
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cli import hook, launch
from cli.launch import CLAUDE_CODE, CODEX, GEMINI_CLI, RUNTIMES, UnsupportedTargetError
from tests.agentconnect.conftest import AGENT
from tests.api import wait_for
from tests.loop.launched import (
    CLAUDE_TARGET,
    CODEX_LAUNCHED,
    CODEX_TARGET,
    GEMINI_TARGET,
    Launch,
    Launched,
    anthropic,
    events_of,
    gemini_model,
    launcher,
    openai_model,
    session_in,
)
from tests.loop.linked import key
from tests.loop.tried import IMPROVED, Tried, seed_arms

__all__ = ["anthropic", "gemini_model", "launcher", "openai_model"]

SUGGESTION = "Add an explicit definition-of-done criterion to the instruction."
FIRST_TEXT = "Run the unit tests before you say a change is done."
SECOND_TEXT = "Keep every change under fifty lines."


def test_claude_code_runs_as_chosen_with_the_treatment_suggestion_and_ends_closed(
    launcher: Launch, tried: Tried
) -> None:
    """Version 1 of the standing instructions, PUT through HTTP, reaches the model's system
    prompt, followed by the treatment arm's suggestion; the summary names the version."""
    assert launcher.instruct({"text": FIRST_TEXT}) == 1
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
    assert ran.flag("--append-system-prompt") == f"{FIRST_TEXT}\n\n{SUGGESTION}"
    assert not any(launcher.token in arg for arg in ran.argv), "the bearer is never in argv"
    assert "OTEL_EXPORTER_OTLP_HEADERS" in ran.records[0]["env"]
    assert "EVIDENCIA_TOKEN" not in ran.records[0]["env"]
    main = [r for r in launcher.claude_model.requests if r.main]
    assert {r.model for r in main} == {CLAUDE_TARGET["model"]}
    assert all(r.system.index(FIRST_TEXT) < r.system.index(SUGGESTION) for r in main)
    assert all(r.body.get("output_config", {}).get("effort") == "high" for r in main)
    [summary] = [line for line in ran.stderr.splitlines() if "by rule" in line]
    assert f"instructions v1; trial {trial} treatment" in summary
    assert f"telemetry to project {launcher.loop.project} as dev-api" in summary

    stored = launcher.session(session)
    assert (stored["state"], stored["cause"]) == ("closed", None)
    assert (stored["source"], stored["agents"]) == ("claude-code", ["dev-api"])
    events = events_of(launcher.loop.project, session)
    assert {"session.started", "tool.call", "model.chat"} <= {e["type"] for e in events}
    assert all(e["agent"] == "dev-api" for e in events)
    assert stored["usage"]["cost_usd"] > 0, "the agent's own telemetry counted its cost"
    assert launcher.settled_analysis(session)["trigger"] == "session_end"


def test_a_control_session_gets_the_standing_instructions_alone_in_the_version_in_force(
    launcher: Launch, tried: Tried
) -> None:
    """A control session's model gets the version in force at its start and no suggestion;
    after a rollback to version 1 (a new version 3 with its text), the next session's
    model gets version 1's text, and its summary names version 3."""
    assert launcher.instruct({"text": FIRST_TEXT}) == 1
    assert launcher.instruct({"text": SECOND_TEXT}) == 2
    trial = tried.start_trial(share=0.5).json()["id"]

    systems: dict[int, list[str]] = {}
    for version in (2, 3):
        if version == 3:
            assert launcher.instruct({"fromVersion": 1, "reason": "roll back"}) == 3
        before = len(launcher.claude_model.requests)
        launcher.claude_model.answer_text("Done.")
        ran = launcher.run("Fix it.", title="deep dive", session_id=session_in("control", trial))
        assert ran.code == 0, ran.stderr
        assert ran.flag("--append-system-prompt") == (SECOND_TEXT if version == 2 else FIRST_TEXT)
        systems[version] = [r.system for r in launcher.claude_model.requests[before:] if r.main]
        assert systems[version]
        assert f"instructions v{version}; trial {trial} control" in ran.stderr
    assert all(SECOND_TEXT in s and FIRST_TEXT not in s for s in systems[2])
    assert all(FIRST_TEXT in s and SECOND_TEXT not in s for s in systems[3])
    assert not any(SUGGESTION in s for found in systems.values() for s in found)


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
    says. The standing instructions reach the model in a context file of the launcher's own
    folder, beside the user's own GEMINI.md, which is neither changed nor left out:
    version 1 and the suggestion in a treatment session, then version 2 alone in the next
    session, a control one."""
    trial = tried.start_trial(share=0.5).json()["id"]
    user_context = launcher.home / ".gemini" / "GEMINI.md"
    user_context.write_text("The user's own context: answer in English.\n")
    user_files = {p: p.stat().st_mtime for p in launcher.home.rglob("*") if p.is_file()}

    seen: dict[str, tuple[bool, ...]] = {}
    for arm, text in (("treatment", FIRST_TEXT), ("control", SECOND_TEXT)):
        version = launcher.instruct({"text": text})
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
        sent = [json.dumps(r.body) for r in main]
        seen[arm] = tuple(
            all(said in body for body in sent)
            for said in (FIRST_TEXT, SECOND_TEXT, SUGGESTION, "The user's own context")
        )
        assert f"instructions v{version}; trial {trial} {arm}" in ran.stderr
        stored = launcher.session(ran.session_id)
        assert (stored["state"], stored["source"]) == ("closed", "gemini-cli")
    assert seen == {"treatment": (True, False, True, True), "control": (False, True, False, True)}
    assert not list(launcher.work.iterdir()), "nothing written where the agent works"
    for path, mtime in user_files.items():
        assert path.stat().st_mtime == mtime, f"{path} was changed"


CODEX_CONVERSATION = "01a2437c-61b2-7ab2-b15d-3385bd131b8c"
"""The session Codex named itself in the capture the stand-in exports."""


def test_codex_runs_as_chosen_with_the_treatment_suggestion_and_joins_the_launched_session(
    launcher: Launch, tried: Tried
) -> None:
    """The real Codex CLI runs `exec` with the chosen model, effort and sandbox, the
    suggestion among its developer messages; its own telemetry reaches the project through
    the relay, in the launched session (not the one Codex names itself) under the linked
    agent name, and the bearer is in neither its arguments nor its environment."""
    launcher.choose(CODEX_LAUNCHED)
    launcher.instruct({"text": FIRST_TEXT})
    trial = tried.start_trial(share=0.5).json()["id"]
    launcher.codex_model.run_command("echo checked")
    launcher.codex_model.answer_text("Done.")
    session = session_in("treatment", trial)

    ran = launcher.run(
        "",
        title="deep fix",
        session_id=session,
        agent_args=("exec", "--json", "--skip-git-repo-check", "Fix the flaky test."),
    )

    assert ran.code == 0, ran.stderr
    assert ran.argv[:5] == ["exec", "-m", CODEX_TARGET["model"], "-s", "workspace-write"]
    assert ran.flag("-c") == 'model_reasoning_effort="high"'
    assert not any(launcher.token in arg for arg in ran.argv), "the bearer is never in argv"
    assert not {"EVIDENCIA_TOKEN", "OTEL_EXPORTER_OTLP_HEADERS"} & set(ran.records[0]["env"])
    requests = launcher.codex_model.requests
    assert len(requests) == 2
    assert {(r.model, r.reasoning_effort) for r in requests} == {(CODEX_TARGET["model"], "high")}
    expected = f"{FIRST_TEXT}\n\n{SUGGESTION}"
    assert all(any(expected in text for text in r.texts("developer")) for r in requests)
    [summary] = [line for line in ran.stderr.splitlines() if "by rule" in line]
    assert "codex (gpt-5.5; effort high; -s workspace-write)" in summary
    assert f"instructions v1; trial {trial} treatment" in summary

    stored = launcher.session(session)
    assert (stored["state"], stored["cause"]) == ("closed", None)
    assert (stored["source"], stored["agents"]) == ("codex", ["dev-api"])
    assert {"session.started", "tool.call", "model.chat"} <= {
        e["type"] for e in events_of(launcher.loop.project, session)
    }
    conversation = requests[0].header("session-id")
    assert conversation
    assert not launcher.session_exists(conversation), "nothing under Codex's own id"


def test_a_codex_control_session_gets_nothing_added_and_a_failing_run_ends_with_its_code(
    launcher: Launch, tried: Tried
) -> None:
    """With no standing instructions, a control session adds nothing; refused every time
    (Codex 0.171 tries a turn six times), Codex exits 1."""
    launcher.choose(CODEX_LAUNCHED)
    trial = tried.start_trial(share=0.5).json()["id"]
    launcher.codex_model.fail(times=10)

    ran = launcher.run(
        "",
        title="deep fix",
        session_id=session_in("control", trial),
        agent_args=("exec", "--skip-git-repo-check", "Fix it."),
    )

    assert ran.code == 1, ran.stderr
    assert not any("developer_instructions" in arg for arg in ran.argv)
    assert f"no instructions; trial {trial} control" in ran.stderr
    requests = launcher.codex_model.requests
    assert requests
    assert not any(SUGGESTION in text for r in requests for text in r.texts("developer"))
    stored = launcher.session(ran.session_id)
    assert (stored["state"], stored["cause"]) == ("closed_abnormally", "exit_code_1")


def test_a_codex_run_killed_mid_turn_ends_closed_abnormally_by_the_signal(
    launcher: Launch,
) -> None:
    launcher.choose(CODEX_LAUNCHED)
    launcher.codex_model.run_command("sleep 60")
    agent_args = ("exec", "--skip-git-repo-check", "Wait a while.")
    ran: list[Launched] = []
    running = threading.Thread(
        target=lambda: ran.append(launcher.run("", title="deep wait", agent_args=agent_args))
    )
    running.start()
    try:
        wrapper = wait_for(lambda: next(launcher.records.glob("codex-*.json"), None), timeout=120)
        wait_for(lambda: launcher.codex_model.requests, timeout=120)
        wait_for(lambda: launcher.codex_model.reported, timeout=60)  # the command is running
        [native] = children_of(json.loads(wrapper.read_text())["pid"])
        os.kill(native, signal.SIGKILL)
    finally:
        running.join(timeout=120)
    [killed] = ran
    assert killed.code == 128 + signal.SIGKILL, killed.stderr
    stored = launcher.session(killed.session_id)
    assert (stored["state"], stored["cause"]) == ("closed_abnormally", "signal_sigkill")


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (`codex` runs its native binary as a child)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_codex_telemetry_joins_the_launched_session_through_the_relay_never_seeing_the_bearer(
    launcher: Launch, tried: Tried
) -> None:
    """The Codex stand-in exports a real Codex capture (logs and traces) to the exporters its
    `-c` settings name: every record lands in the launched session under the linked agent
    name, none under the id Codex named, and the bearer is in neither its arguments nor its
    environment."""
    launcher.codex_stand_in()
    launcher.choose(CODEX_LAUNCHED)
    trial = tried.start_trial(share=0.5).json()["id"]
    session = session_in("treatment", trial)

    ran = launcher.run(
        "", title="deep fix", session_id=session, agent_args=("exec", "--json", "Fix it.")
    )

    assert ran.code == 0, ran.stderr
    assert ran.argv[:5] == ["exec", "-m", "gpt-5.5", "-s", "workspace-write"]
    assert ran.argv[-2:] == ["--json", "Fix it."]
    assert f"developer_instructions={json.dumps(SUGGESTION)}" in ran.argv
    [record] = ran.records
    assert not any(launcher.token in arg for arg in ran.argv), "the bearer is never in argv"
    assert not any(launcher.token in value for value in record["env"].values())
    answers = [(url.rsplit("/", 2)[1:], status) for url, status, _ in record["answers"]]
    assert answers == [(["v1", "logs"], 200), (["v1", "traces"], 200)], "both went through"

    stored = launcher.session(session)
    assert (stored["state"], stored["cause"], stored["agents"]) == ("closed", None, ["dev-api"])
    events = events_of(launcher.loop.project, session)
    assert len(events) > 1, "the relayed records, beside the launcher's session.started"
    assert all(e["agent"] == "dev-api" for e in events)
    assert not launcher.session_exists(CODEX_CONVERSATION), "nothing under Codex's own id"


def test_an_argument_the_chosen_runtime_refuses_ends_the_session_and_runs_nothing(
    launcher: Launch,
) -> None:
    """`-p PROMPT` is Claude Code's prompt and Codex's profile: it passes before the choice,
    and is refused once Codex is chosen."""
    launcher.choose(CODEX_LAUNCHED)

    ran = launcher.run("Fix it.", title="deep fix")

    assert ran.code == launch.USAGE
    assert ran.records == [], "no agent ran"
    assert "-p is refused: it would override what the launcher sets for Codex" in ran.stderr
    stored = launcher.session(ran.session_id)
    assert (stored["state"], stored["cause"]) == ("closed_abnormally", "argument_refused")


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
    assert launched["instructionsVersion"] is None
    assert "--append-system-prompt" not in ran.argv, "no instructions, no trial: nothing added"
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


def test_launched_sessions_are_joined_per_target_and_counted_in_their_arms(
    launcher: Launch, tried: Tried
) -> None:
    """Three sessions per target, under a running trial: the selection report joins every
    one under the target that ran it, and the trial counts each in the arm it was given.
    Once the trial reads improved and is adopted, version 2 (version 1, then the
    suggestion) is in the next launched session's model request, with no trial left."""
    assert launcher.instruct({"text": FIRST_TEXT}) == 1
    trial = tried.start_trial(share=0.5).json()["id"]
    arms: dict[str, int] = {"treatment": 0, "control": 0}
    for index in range(6):
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
    assert report["sessions"]["joined"] == 6, report["sessions"]
    by_target = {entry["targetKey"]: entry["sessions"] for entry in report["targets"]}
    assert by_target == {key(CLAUDE_TARGET): 3, key(GEMINI_TARGET): 3}
    read = launcher.loop.connect.api.call(
        "GET", tried.path(f"/trials/{trial}"), token=tried.admin
    ).json()
    for arm, count in arms.items():
        assert read["arms"][arm]["sessions"] == count
        assert read["arms"][arm]["lost"] == 0
    seed_arms(tried.loop, trial, IMPROVED)
    adopted = launcher.loop.connect.api.post(tried.path(f"/trials/{trial}/adopt"), {}, tried.admin)
    assert adopted.json()["adoptedAs"] == 2, adopted.text
    before = len(launcher.claude_model.requests)
    launcher.claude_model.answer_text("Done.")
    ran = launcher.run("Fix it.", title="deep fix")
    assert ran.code == 0, ran.stderr
    adopted_text = f"{FIRST_TEXT}\n\n{SUGGESTION}"
    assert ran.flag("--append-system-prompt") == adopted_text, "version 2, with no trial"
    systems = [r.system for r in launcher.claude_model.requests[before:] if r.main]
    assert systems
    assert all(adopted_text in system for system in systems)


# -- the mapping table, pure ------------------------------------------------------------

RELAY = "http://127.0.0.1:5555/relay-secret"


def codex_argv(
    target: dict[str, Any], suggestion: str = "", relay: str | None = RELAY
) -> list[str]:
    """The whole command the launcher runs for a Codex target and `exec "Fix it."`."""
    chosen, _ = launch.chosen_args(CODEX, target, "s-1")
    added = launch.instructions_args(CODEX, suggestion, Path("/unused"))
    added += launch.telemetry_args(CODEX, relay)
    return launch.agent_command(CODEX, "codex", [*chosen, *added], ["exec", "--json", "Fix it."])


def settings_of(argv: list[str]) -> dict[str, Any]:
    """Every `-c` setting of a Codex command, read as Codex reads it (TOML)."""
    read: dict[str, Any] = {}
    for flag, setting in itertools.pairwise(argv):
        if flag == "-c":
            [(key, value)] = tomllib.loads(setting).items()
            read[key] = {**read.get(key, {}), **value} if isinstance(value, dict) else value
    return read


@pytest.mark.pure
def test_gemini_cli_takes_each_permission_mode_as_its_own_approval_mode() -> None:
    modes = {
        mode: launch.chosen_args(GEMINI_CLI, {**GEMINI_TARGET, "permissionMode": mode}, "s")[0]
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
        launch.chosen_args(narrow, {**GEMINI_TARGET, "permissionMode": "acceptEdits"}, "s")
    with pytest.raises(UnsupportedTargetError, match="not ultra"):
        launch.chosen_args(CLAUDE_CODE, {**CLAUDE_TARGET, "effort": "ultra"}, "s")


@pytest.mark.pure
def test_claude_code_takes_every_setting_as_a_flag() -> None:
    chosen, not_applied = launch.chosen_args(
        CLAUDE_CODE, {**CLAUDE_TARGET, "fastMode": True}, "s-1"
    )
    added = launch.instructions_args(CLAUDE_CODE, "Check.", Path("/unused"))
    added += launch.telemetry_args(CLAUDE_CODE, None)
    argv = launch.agent_command(CLAUDE_CODE, "claude", [*chosen, *added], ["-p", "Fix it."])
    assert argv == [
        "claude", "--model", "claude-sonnet-4-6", "--permission-mode", "bypassPermissions",
        "--session-id", "s-1", "--effort", "high", "--fast-mode", "on",
        "--append-system-prompt", "Check.", "-p", "Fix it.",
    ]  # fmt: skip
    assert not_applied == []
    _, gemini_not_applied = launch.chosen_args(GEMINI_CLI, {**GEMINI_TARGET, "fastMode": True}, "s")
    assert gemini_not_applied == [
        "effort medium: Gemini CLI has no effort setting",
        "fast mode: Gemini CLI has no fast mode",
    ]


@pytest.mark.pure
def test_codex_runs_exec_with_the_chosen_model_effort_and_sandbox_after_its_subcommand() -> None:
    """Codex takes the launcher's arguments after `exec`, the effort and the telemetry as
    `-c` settings; it has no session flag (the relay names the session) and no fast mode."""
    argv = codex_argv({**CODEX_TARGET, "fastMode": True})
    exporter = '{{otlp-http={{endpoint="{}/v1/{}",protocol="json"}}}}'
    assert argv == [
        "codex", "exec", "-m", "gpt-5.5", "-s", "workspace-write",
        "-c", 'model_reasoning_effort="high"',
        "-c", "otel.exporter=" + exporter.format(RELAY, "logs"),
        "-c", "otel.trace_exporter=" + exporter.format(RELAY, "traces"),
        "-c", "otel.metrics_exporter=" + exporter.format(RELAY, "metrics"),
        "--json", "Fix it.",
    ]  # fmt: skip
    assert settings_of(argv)["otel"]["metrics_exporter"] == {
        "otlp-http": {"endpoint": f"{RELAY}/v1/metrics", "protocol": "json"}
    }
    _, not_applied = launch.chosen_args(CODEX, {**CODEX_TARGET, "fastMode": True}, "s-1")
    assert not_applied == ["fast mode: Codex has no fast mode"]
    unlinked = codex_argv(CODEX_TARGET, relay=None)
    assert settings_of(unlinked)["otel"] == {"metrics_exporter": "none"}, "nothing to the vendor"
    interactive = launch.agent_command(CODEX, "codex", ["-m", "x"], ["Fix it."])
    assert interactive == ["codex", "-m", "x", "Fix it."]


@pytest.mark.pure
def test_codex_takes_each_permission_mode_as_a_sandbox_never_freer() -> None:
    sandboxes = {
        mode: codex_argv({**CODEX_TARGET, "permissionMode": mode})[5]
        for mode in ("plan", "default", "acceptEdits", "bypassPermissions")
    }
    assert sandboxes == {
        "plan": "read-only",
        "default": "read-only",
        "acceptEdits": "workspace-write",
        "bypassPermissions": "danger-full-access",
    }


@pytest.mark.pure
def test_codex_takes_each_of_its_efforts_as_a_setting_and_refuses_another() -> None:
    for effort in ("minimal", "low", "medium", "high", "xhigh"):
        argv = codex_argv({**CODEX_TARGET, "effort": effort})
        assert settings_of(argv)["model_reasoning_effort"] == effort
    with pytest.raises(UnsupportedTargetError, match=r"Codex takes effort .* not max"):
        codex_argv({**CODEX_TARGET, "effort": "max"})


@pytest.mark.pure
def test_a_suggestion_reaches_codex_as_a_toml_string_whatever_it_holds() -> None:
    """A `-c` value is read as TOML (one that does not parse would be taken as its raw text,
    quotes and all): quotes, newlines, backslashes, braces, DEL and non-ASCII all survive."""
    suggestion = 'Say "done" when done.\nThen:\t{stop}\\ here \x7f é ✓ 🙂 \\"quoted\\"'
    argv = codex_argv(CODEX_TARGET, suggestion)
    assert settings_of(argv)["developer_instructions"] == suggestion
    assert argv.index("-c", argv.index("-s")) < argv.index("--json"), "before the agent's own"
    assert "developer_instructions" not in " ".join(codex_argv(CODEX_TARGET)), "a control's"


STANDING = {"version": 2, "text": FIRST_TEXT}
FOLDER = Path("/unused/evidencia-run")


def arm(name: str) -> list[dict[str, Any]]:
    """A session start's trials: one, the session in arm `name`."""
    return [{"trialId": "t-1", "hypothesisId": "h-1", "arm": name, "sugestao": SUGGESTION}]


def given(runtime: launch.Runtime, standing: dict[str, Any] | None, trials: list[Any]) -> Any:
    """What `runtime` is given to add to its instructions: its argument's text (a Codex
    setting read as TOML), or its context file's text in the folder its argument names;
    None when nothing is added."""
    text = hook.instructions_added(standing, trials)
    args = launch.instructions_args(runtime, text, FOLDER)
    files = launch.context_files(runtime, text)
    if not args:
        assert files == {}, "no context file either"
        return None
    if runtime.context_file:
        assert args == ["--include-directories", str(FOLDER)]
        assert list(files) == [runtime.context_file]
        return files[runtime.context_file]
    settings = settings_of(args) if args[0] == "-c" else {}
    return settings.get("developer_instructions", args[-1])


@pytest.mark.pure
@pytest.mark.parametrize(
    ("runtime", "ending"), [(CLAUDE_CODE, ""), (GEMINI_CLI, "\n"), (CODEX, "")]
)
def test_every_runtime_gets_the_standing_instructions_and_a_treatment_its_suggestion_after(
    runtime: launch.Runtime, ending: str
) -> None:
    """Claude Code's `--append-system-prompt`, Gemini CLI's GEMINI.md in the launcher's own
    folder and Codex's `developer_instructions` carry the standing instructions followed by
    the suggestion in a treatment arm, the standing instructions alone in a control arm or
    with no trial, the suggestion alone with no standing instructions, and nothing when
    there is neither."""
    both = f"{FIRST_TEXT}\n\n{SUGGESTION}"
    assert given(runtime, STANDING, arm("treatment")) == both + ending
    assert given(runtime, STANDING, arm("control")) == FIRST_TEXT + ending
    assert given(runtime, STANDING, []) == FIRST_TEXT + ending
    assert given(runtime, None, arm("treatment")) == SUGGESTION + ending
    assert given(runtime, None, arm("control")) is None
    assert given(runtime, None, []) is None


@pytest.mark.pure
def test_the_summary_names_the_instructions_version_or_says_there_is_none() -> None:
    trials = arm("control")
    plan = launch.Plan("s-1", 4, CLAUDE_TARGET, "rule", trials, None, STANDING)
    assert "; instructions v2; trial t-1 control;" in plan.summary()
    assert plan.as_json()["instructionsVersion"] == 2
    assert FIRST_TEXT not in plan.summary() + json.dumps(plan.as_json()), "the version only"
    bare = launch.Plan("s-1", 4, CLAUDE_TARGET, "rule", [], None, None)
    assert "; no instructions; no trial;" in bare.summary()
    assert bare.as_json()["instructionsVersion"] is None


@pytest.mark.pure
def test_the_bearer_is_never_on_a_command_line() -> None:
    """The relay holds Codex's bearer: its command names the relay, never the token; Claude
    Code's and Gemini CLI's bearer is in their environment."""
    token = "tok-secret-123"
    telemetry = launch.Telemetry("http://h", "p1", "dev-api")
    for runtime, target in ((CODEX, CODEX_TARGET), (CLAUDE_CODE, CLAUDE_TARGET)):
        chosen, _ = launch.chosen_args(runtime, target, "s-1")
        added = launch.telemetry_args(runtime, RELAY if runtime is CODEX else None)
        argv = launch.agent_command(runtime, runtime.executable, [*chosen, *added], ["exec"])
        assert not any(token in arg for arg in argv)
    env = launch.agent_environment({"EVIDENCIA_TOKEN": token}, CODEX, telemetry, token)
    assert env == {}, "nothing of the token in Codex's environment either"


@pytest.mark.pure
@pytest.mark.parametrize(
    ("runtime", "arg"),
    [(CLAUDE_CODE, "--model"), (CLAUDE_CODE, "--model=opus"), (GEMINI_CLI, "-m"),
     (CLAUDE_CODE, "--effort"), (CLAUDE_CODE, "--permission-mode"), (GEMINI_CLI, "--yolo"),
     (GEMINI_CLI, "-y"), (GEMINI_CLI, "--approval-mode=yolo"), (GEMINI_CLI, "--session-id"),
     (CLAUDE_CODE, "--resume"), (CLAUDE_CODE, "--dangerously-skip-permissions"),
     (CLAUDE_CODE, "--fast-mode"), (GEMINI_CLI, "--telemetry-otlp-endpoint=http://x"),
     (CODEX, "-m"), (CODEX, "--model=o3"), (CODEX, "-s"), (CODEX, "--sandbox"),
     (CODEX, "--dangerously-bypass-approvals-and-sandbox"), (CODEX, "--approve-for-me"),
     (CODEX, "-p"), (CODEX, "--profile=fast"), (CODEX, "--oss"), (CODEX, "--remote")],
)  # fmt: skip
def test_an_argument_overriding_a_chosen_setting_is_refused_in_one_sentence(
    runtime: launch.Runtime, arg: str
) -> None:
    said = launch.refused_argument(["exec", arg, "Fix it."], runtime)
    assert said is not None
    assert said.startswith(f"{arg.split('=', maxsplit=1)[0]} is refused")
    assert runtime.label in said
    assert said.count(".") == 1
    assert said.endswith(".")


@pytest.mark.pure
@pytest.mark.parametrize(
    "args",
    [["-c", "model=o3"], ["--config", "sandbox_mode=danger-full-access"],
     ["-c=model_reasoning_effort=xhigh"], ["--config=developer_instructions=x"],
     ["-c", "otel.exporter={otlp-http={endpoint=\"http://x\"}}"], ["-c", "otel={}"],
     ["-c", ' "otel" . "metrics_exporter" = "statsig"'], ["-c", "profile=fast"],
     ["-cmodel=o3"], ["-sdanger-full-access"], ["--json", "-mgpt-4o"]],
)  # fmt: skip
def test_codex_refuses_a_setting_the_launcher_chooses_however_it_is_written(
    args: list[str],
) -> None:
    said = launch.refused_argument(["exec", *args, "Fix it."], CODEX)
    assert said is not None
    assert " is refused: it would override what the launcher sets for Codex" in said


@pytest.mark.pure
@pytest.mark.parametrize(
    "args",
    [["exec", "resume", "0199a213-81c0-7800-8aa1-bbab2a035a53"], ["exec", "resume", "--last"],
     ["exec", "--json", "fork", "x"], ["resume"], ["fork", "--last"], ["e", "resume"]],
)  # fmt: skip
def test_codex_refuses_resuming_or_forking_another_session(args: list[str]) -> None:
    """`codex exec resume ID` goes on with a recorded session under its own model, effort
    and sandbox, not the chosen ones."""
    said = launch.refused_argument(args, CODEX)
    assert said is not None
    assert "Codex would go on with another session" in said


@pytest.mark.pure
def test_arguments_are_refused_by_the_chosen_runtime_alone() -> None:
    """Codex's `-p` is its config profile and Claude Code's the prompt: `-p PROMPT` passes
    before the choice and for Claude Code, and is refused for Codex; an argument every
    runtime refuses is refused before anything starts."""
    args = ["-p", "Fix it.", "--output-format", "json"]
    assert launch.refused_argument(args, CLAUDE_CODE) is None
    assert launch.refused_argument(args, GEMINI_CLI) is None
    assert (launch.refused_argument(args, CODEX) or "").startswith("-p is refused")
    assert launch.refused_everywhere(args, RUNTIMES.values()) is None
    every = launch.refused_everywhere(["--model", "x"], RUNTIMES.values())
    assert (every or "").startswith("--model is refused")


@pytest.mark.pure
def test_arguments_that_choose_nothing_pass() -> None:
    args = ["-p", "--model is a word here", "--output-format", "json", "--allowedTools", "Bash"]
    assert launch.refused_argument(args, CLAUDE_CODE) is None
    assert (
        launch.refused_argument(["-p", "Fix -m here", "--output-format", "json"], GEMINI_CLI)
        is None
    )
    codex_args = [
        "exec", "--json", "--skip-git-repo-check", "-C", "/work",
        "-c", 'model_provider="standin"', "-c", "model_providers.standin.base_url=x",
        "--enable", "web_search", "Resume the work; fork it.",
    ]  # fmt: skip
    assert launch.refused_argument(codex_args, CODEX) is None


@pytest.mark.pure
def test_the_prompt_is_read_as_each_runtime_takes_it() -> None:
    """The title is the prompt as the first runtime that reads one takes it: Claude Code's
    and Gemini CLI's `-p TEXT`, Codex's first positional argument after `exec`."""
    codex = ["exec", "--json", "-c", 'model_provider="x"', "-C", "/w", "Fix  the\nbug."]
    assert launch.prompt_of(codex, CODEX) == "Fix  the\nbug."
    assert launch.prompt_of(codex, CLAUDE_CODE) is None
    assert launch.default_title(codex) == "Fix the bug."
    assert launch.prompt_of(["-p", "fast", "exec", "Fix it."], CODEX) == "Fix it."
    assert launch.prompt_of(["-p", "Fix it."], CODEX) is None, "Codex's -p is a profile"
    assert launch.default_title(["-p", "Fix it.", "--output-format", "json"]) == "Fix it."
    assert launch.prompt_of(["--prompt=Fix it."], GEMINI_CLI) == "Fix it."
    assert launch.default_title(["exec", "-"]) == "evidencia launch", "a prompt from stdin"
    assert launch.default_title(["--output-format", "json"]) == "evidencia launch"


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
