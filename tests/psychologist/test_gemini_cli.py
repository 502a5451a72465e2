"""The real Gemini CLI (`tests/agents/gemini.py`, npm-locked) sends its own telemetry, as
its users configure it in settings.json, while our Gemini test server makes it run a shell
command that fails three times. Its spans all end OK and its tool_call logs say
`success: true`: the failure is only in each log's metadata (`exitCode`, `isError`). Read
back: one session under its own session id and the agent name its resource carries, the
three failures counted, tokens as the test server reported them, and a normal end once
the finished run goes quiet."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.agents.gemini import Telemetry, run_gemini
from tests.api import Configure, document, wait_for
from tests.psychologist.conftest import Psychologist

SHELL = "run_shell_command"
FAILING = "echo failing >&2; exit 2"


def test_three_failing_shell_runs_are_counted_and_the_finished_run_ends_normally(
    psy: Psychologist, configure: Configure, tmp_path: Path
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="2")
    model = psy.world.gemini
    for attempt in range(3):
        model.call_function(SHELL, {"command": FAILING, "description": f"Try {attempt}"})
    model.answer_text("It failed three times with exit code 2.")
    session_id = str(uuid.uuid4())
    done = run_gemini(
        "Run the failing command.",
        base_url=model.url,
        home=tmp_path,
        model=None,
        session_id=session_id,
        telemetry=Telemetry(f"{psy.api.base_url}/projects/{psy.project}/otlp"),
        env={
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {psy.member}",
            "OTEL_RESOURCE_ATTRIBUTES": "gen_ai.agent.name=builder",
        },
    )
    assert done.returncode == 0, done.stderr

    session = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (session["source"], session["agents"]) == ("gemini-cli", ["builder"])
    assert session["tool_errors"] == 3
    assert session["turns"]["open"] == []
    answered = [request.usage for request in model.requests if request.usage]
    assert session["usage"]["input_tokens"] == sum(u["promptTokenCount"] for u in answered)
    assert session["usage"]["output_tokens"] == sum(
        u.get("candidatesTokenCount", 0) for u in answered
    )

    assert wait_for(lambda: psy.sweep()["sessions"]) == [session_id]
    ended = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (ended["state"], ended["cause"]) == ("closed", "turns_closed")
