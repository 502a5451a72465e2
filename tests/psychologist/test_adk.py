"""Google's ADK 2.13 run for real (`tests/agents/google_adk.py`: its own interpreter, from its own
hash-pinned lock), its model ADK's `Gemini` pointed at our Gemini test server, its own
OpenTelemetry (ADK's `maybe_set_otel_providers` with the SDK's OTLP/HTTP protobuf
exporter) sending to the project's trace endpoint with the member's bearer. Three turns of
one ADK session each call a tool that raises. What it sent is read back through Firestore
and the API: one session under ADK's own session id, each failure counted once, every turn
closed, tokens equal to what the stand-in reported, and an end by silence that its turns
give."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cli.gemini_stand_in import Reply
from tests.agents.google_adk import ensure_installed, run_agent
from tests.api import Configure, document, wait_for
from tests.psychologist.conftest import Psychologist

AGENT = "builder"
TOOL = "run_command"
TURNS = 3


@pytest.fixture(scope="module")
def adk() -> Path:
    """The ADK interpreter, its venv made from the lock the first time."""
    return ensure_installed()


def test_adks_own_traces_of_three_failing_turns_land_as_one_session_that_ends_as_its_turns_say(
    adk: Path, psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="2")
    gemini = psy.world.gemini
    for _ in range(TURNS):
        gemini.call_function(TOOL, {"command": "make build"})
    # Told a tool's result (never, while the tool raises), the model says it is done.
    gemini.respond_with(lambda _request: Reply(text="The build is done."))
    session_id = f"adk-{uuid.uuid4()}"
    finished = run_agent(
        endpoint=f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/traces",
        token=psy.member,
        gemini_url=gemini.url,
        session_id=session_id,
        agent_name=AGENT,
        turns=TURNS,
    )
    assert finished.returncode == 0, finished.stderr
    last_failed = f"turn {TURNS} failed" in finished.stderr

    session = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (session["source"], session["agents"], session["state"]) == (
        "google-adk",
        [AGENT],
        "open",
    )
    assert session["tool_errors"] == TURNS
    turns = session["turns"]
    assert (turns["open"], len(turns["closed"]), turns["last"]["failed"]) == (
        [],
        TURNS,
        last_failed,
    )
    asked = gemini.main_requests()
    assert len(asked) == TURNS, "each turn asked the model once, and it called the tool"
    assert all(TOOL in request.tools for request in asked), [r.tools for r in asked]
    reported = gemini.reported_usage()
    usage = session["usage"]
    assert reported["inputTokens"] > 0
    assert (usage["input_tokens"], usage["output_tokens"], usage.get("cached_tokens", 0)) == (
        reported["inputTokens"],
        reported["outputTokens"],
        reported["cachedTokens"],
    ), "what the model reported, once, thought tokens among the output"

    assert wait_for(lambda: psy.sweep()["sessions"]) == [session_id]
    ended = document(f"projects/{psy.project}/sessions/{session_id}")
    expected = (
        ("closed_abnormally", "last_turn_failed") if last_failed else ("closed", "turns_closed")
    )
    assert (ended["state"], ended["cause"]) == expected
