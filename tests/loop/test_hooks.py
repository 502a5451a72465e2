"""Sessions started by hand join the loop: `evidencia hooks install claude-code` writes the
hook and telemetry settings into the user's own Claude Code settings, and the real Claude
Code, typed as a person types it (`claude -p`, `claude -p --resume`, no wrapper, no flag
of ours), registers its own session id, is given its arm's instructions, and feeds its
telemetry to the linked project under that id."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli.anthropic_stand_in import Recorded
from functions.loop.randomization import arm_of
from tests.agentconnect.conftest import AGENT
from tests.agents import claude
from tests.api import wait_for
from tests.loop.launched import (
    Launch,
    anthropic,
    gemini_model,
    launcher,
    openai_model,
    session_in,
)
from tests.loop.linked import AGENT_NAME
from tests.loop.tried import Tried

__all__ = ["anthropic", "gemini_model", "launcher", "openai_model"]

SUGGESTION = "Add an explicit definition-of-done criterion to the instruction."
"""The accepted hypothesis's suggestion (`tests.psychologist.conftest.hypothesis`)."""
EVIDENCIA = Path(sys.executable).with_name("evidencia")
STANDING = "Run the tests you touched before you say a task is done."
BEFORE = '{\n    "theme": "dark",\n  "env": {"MY_OWN": "1"}\n}\n'
"""The person's own settings, oddly indented: uninstall must give them back byte for byte."""


def hooks(launcher: Launch, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [str(EVIDENCIA), "hooks", *args],
        env=env or launcher.environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def by_hand(launcher: Launch, prompt: str, *extra: str) -> dict[str, Any]:
    """`claude -p PROMPT` as a person runs it, in the person's own HOME; its JSON result."""
    launcher.claude_model.answer_text("Done.")
    ran = claude.run_claude(
        prompt,
        base_url=launcher.claude_model.url,
        home=launcher.home,
        cwd=launcher.work,
        extra_args=extra,
    )
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout)
    return result


def run_hook(env: dict[str, str], session_id: str, source: str) -> Any:
    """`evidencia hook claude-code SessionStart` given what Claude Code gives it on stdin."""
    said = {"session_id": session_id, "source": source, "hook_event_name": "SessionStart"}
    return subprocess.run(
        [str(EVIDENCIA), "hook", "claude-code", "SessionStart"],
        input=json.dumps(said),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def main_requests_since(launcher: Launch, before: int) -> list[Recorded]:
    return [r for r in launcher.claude_model.requests[before:] if r.main]


def sent_text(request: Recorded) -> str:
    """Everything the model was given: the system prompt and every message's text."""
    texts = [request.system]
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    return "\n".join(texts)


def trial_read(tried: Tried, trial: str) -> dict[str, Any]:
    api = tried.loop.connect.api
    reply = api.call("GET", tried.path(f"/trials/{trial}"), token=tried.admin)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def sent_to_model(launcher: Launch, session_id: str) -> list[str]:
    """What each main-loop request of the session gave the model (Claude Code names its
    session in each request's `metadata.user_id`)."""
    return [
        sent_text(r)
        for r in launcher.claude_model.requests
        if r.main and session_id in json.dumps(r.body.get("metadata", {}))
    ]


def test_a_hand_started_claude_code_session_gets_its_arm_keeps_it_on_resume_and_uninstalls_clean(
    launcher: Launch, tried: Tried
) -> None:
    settings = launcher.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(BEFORE)
    assert launcher.instruct({"text": STANDING}) == 1
    trial = tried.start_trial(share=0.5).json()["id"]

    installed = hooks(
        launcher, "install", "claude-code", "--org", launcher.loop.connect.org, "--agent", AGENT
    )
    assert installed.returncode == 0, installed.stderr
    written = json.loads(settings.read_text())
    assert written["theme"] == "dark"
    assert written["env"]["MY_OWN"] == "1"
    assert launcher.token not in settings.read_text(), "no agent file holds the token"
    kept = launcher.home / ".config" / "evidencia" / "hooks.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600

    natural = by_hand(launcher, "Fix the login bug.")  # its own session id, as typed
    sessions = {str(arm_of(trial, natural["session_id"], 0.5)): natural["session_id"]}
    other = "control" if "treatment" in sessions else "treatment"
    # The other arm too, every time: the same start under an id the trial puts there.
    sessions[other] = by_hand(launcher, "Fix it.", "--session-id", session_in(other, trial))[
        "session_id"
    ]
    counted = trial_read(tried, trial)["arms"]
    for arm in ("treatment", "control"):
        assert (counted[arm]["assigned"], counted[arm]["handStarted"]) == (1, 1), counted
        sent = sent_to_model(launcher, sessions[arm])
        assert sent
        assert all(STANDING in text for text in sent)
        assert all((SUGGESTION in text) == (arm == "treatment") for text in sent), arm
    # its own telemetry, under its own id, through the headers helper's bearer
    treated = sessions["treatment"]
    wait_for(lambda: launcher.session_exists(treated) or None)
    assert launcher.session(treated)["agents"] == [AGENT_NAME]

    resumed_from = len(launcher.claude_model.requests)
    again = by_hand(launcher, "And the logout bug.", "--resume", treated)
    assert again["session_id"] == treated
    counted = trial_read(tried, trial)["arms"]
    assert counted["treatment"]["assigned"] == 1, "a resumed session keeps its one arm"
    resumed = [sent_text(r) for r in main_requests_since(launcher, resumed_from)]
    assert resumed
    assert all(SUGGESTION in text and STANDING in text for text in resumed)
    # What the hook itself answers a resume (Claude Code keeps the first start's context
    # in a resumed transcript, so the request alone cannot tell): the first arm's context.
    said = json.loads(run_hook(launcher.environment(), treated, "resume").stdout)
    context = said["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert context["additionalContext"] == f"{STANDING}\n\n{SUGGESTION}"

    status = hooks(launcher, "status", "--json")
    assert json.loads(status.stdout)["claude-code"]["runs"] is True
    removed = hooks(launcher, "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == BEFORE
    assert not kept.exists()


def test_with_evidencia_away_claude_code_starts_as_usual_with_the_cached_instructions(
    launcher: Launch,
) -> None:
    assert launcher.instruct({"text": STANDING}) == 1
    installed = hooks(
        launcher, "install", "claude-code", "--org", launcher.loop.connect.org, "--agent", AGENT
    )
    assert installed.returncode == 0, installed.stderr
    by_hand(launcher, "Warm the cache.")
    kept = launcher.home / ".config" / "evidencia" / "hooks.json"
    config = json.loads(kept.read_text())
    config["url"] = "http://127.0.0.1:9"  # nothing answers there
    kept.write_text(json.dumps(config))
    before = len(launcher.claude_model.requests)
    away = by_hand(launcher, "Fix it anyway.")
    assert away["is_error"] is False
    sent = [sent_text(r) for r in main_requests_since(launcher, before)]
    assert sent
    assert all(STANDING in text for text in sent)
    unassigned = (launcher.home / ".config" / "evidencia" / "unassigned.jsonl").read_text()
    assert json.loads(unassigned.splitlines()[-1])["sessionId"] == away["session_id"]


def test_the_hook_answers_nothing_and_exits_zero_when_nothing_is_installed(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    ran = run_hook(env, "s-1", "startup")
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
