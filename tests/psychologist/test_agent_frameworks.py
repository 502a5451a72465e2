"""Agent frameworks as their users trace them: a pydantic-ai agent instrumented by
OpenInference, run for real (`tests/agents/openinference_agent.py`, no network), and the
traces Google's ADK 2.13 sent for three turns of one session
(`tests/telemetry_samples/adk/traces.json`, captured from a real run: google-adk's pins
cannot share this environment's, so its export is replayed as it was sent). Each lands as
one session whose failing tool calls are counted and whose turns say how it went."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.api import Configure, document, wait_for
from tests.psychologist.conftest import Psychologist

SAMPLES = Path(__file__).parents[1] / "telemetry_samples"


def test_an_openinference_traced_agent_lands_as_one_session_with_its_tool_failures_counted(
    psy: Psychologist,
) -> None:
    session_id = "oi-session-1"
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.agents.openinference_agent",
            "--endpoint",
            f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/traces",
            "--session-id",
            session_id,
            "--agent-name",
            "builder",
        ],
        env={**os.environ, "OTLP_TOKEN": psy.member},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    session = document(f"projects/{psy.project}/sessions/{session_id}")
    assert (session["source"], session["state"]) == ("openinference", "open")
    assert session["tool_errors"] == 3
    turns = session["turns"]
    assert (turns["open"], len(turns["closed"])) == ([], 3)
    assert session["usage"]["input_tokens"] > 0


def test_adks_own_traces_land_as_one_session_of_three_failed_turns(psy: Psychologist) -> None:
    """The captured export replayed as it was sent; ADK itself runs live, in its own
    environment, in `test_adk.py`."""
    body = (SAMPLES / "adk" / "traces.json").read_bytes()
    reply = requests.post(
        f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/traces",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {psy.member}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    assert reply.json() == {}
    session = document(f"projects/{psy.project}/sessions/adk-session-1")
    assert (session["source"], session["event_count"]) == ("google-adk", 12)
    assert session["tool_errors"] == 3, "a lost call id (<not specified>) merges nothing"
    turns = session["turns"]
    assert (turns["open"], len(turns["closed"]), turns["last"]["failed"]) == ([], 3, True)
    assert json.loads(body)["resourceSpans"][0]["resource"] == {}, "ADK names no service"


def _post_sample(psy: Psychologist, source: str, signal: str) -> dict[str, object]:
    reply = requests.post(
        f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/{signal}",
        data=(SAMPLES / source / f"{signal}.json").read_bytes(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {psy.member}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    answer: dict[str, object] = reply.json()
    return answer


def test_gemini_clis_own_export_counts_the_failures_its_logs_hide_in_metadata(
    psy: Psychologist,
) -> None:
    """Gemini CLI 0.61's traces, logs and metrics of one run, as it sent them (captured
    from the real CLI against our Gemini test server): its spans all end OK and its
    `tool_call` logs say `success: true`, but each holds `exitCode: 2, isError: true` in
    its metadata; the session is named by the resource's agent name, and its tokens are
    the api_response logs', once."""
    for signal in ("traces", "logs"):
        assert _post_sample(psy, "gemini_cli", signal) == {}
    metrics = _post_sample(psy, "gemini_cli", "metrics")
    assert "partialSuccess" in metrics, "metrics Evidencia does not use are said so"
    session = document(f"projects/{psy.project}/sessions/636569f8-e7d1-4ef8-8161-d8b967051856")
    assert (session["source"], session["agents"]) == ("gemini-cli", ["my-agent"])
    assert session["tool_errors"] == 3
    assert session["usage"] == {
        "input_tokens": 7731 + 7818 + 7905 + 7992,
        "output_tokens": 46 * 3 + 12,
        "cached_tokens": 7730 + 7817 + 7904,
    }
    assert session["turns"]["open"] == []


def test_claude_codes_metrics_count_its_tokens_and_cost_once_and_say_what_they_leave(
    psy: Psychologist,
) -> None:
    """Claude Code's metric export (delta sums) of a session that sent nothing else: its
    token and cost points are the session's usage, said to come from metrics, meaning what
    a request's usage means (cache reads and writes are input); the session count and
    active time are answered as rejected; the same export again counts nothing twice."""
    first = _post_sample(psy, "claude_code", "metrics")
    assert first == {
        "partialSuccess": {
            "rejectedDataPoints": "2",
            "errorMessage": "2 a metric Evidencia does not use (only token and cost metrics "
            "are kept)",
        }
    }
    assert _post_sample(psy, "claude_code", "metrics") == first
    session_id = "d2f190e4-774a-4fcf-96f3-184c1beb14b4"
    session = document(f"projects/{psy.project}/sessions/{session_id}")
    assert session["metered"] == {
        "input_tokens": 4 + 66304 + 22321,
        "output_tokens": 146,
        "cached_tokens": 66304,
        "cost_usd": pytest.approx(0.105797),
    }
    row = psy.api.call("GET", psy.path("/sessions"), token=psy.viewer).json()[0]
    assert (row["sessionId"], row["usage"]["from"], row["usage"]["outputTokens"]) == (
        session_id,
        "metrics",
        146,
    )


CODEX_SESSION = "01a2437c-61b2-7ab2-b15d-3385bd131b8c"


def test_codexs_own_export_counts_the_failures_its_output_text_hides_and_keeps_what_says_something(
    psy: Psychologist,
) -> None:
    """Codex CLI 0.171's export of one turn (captured from the real CLI against our
    Responses stand-in, `telemetry_samples/codex/README.md`): its three failed commands say
    `success: "true"` and only their output says `Process exited with code 2`; tokens come
    from the four `response.completed` stream events that carry them; of 782 spans only the
    turn and the three command runs are kept, the rest answered as rejected; its metric
    points name no session and are all rejected; the turn closes with `run_turn`."""
    logs = _post_sample(psy, "codex", "logs")
    traces = _post_sample(psy, "codex", "traces")
    metrics = _post_sample(psy, "codex", "metrics")
    assert traces["partialSuccess"]["rejectedSpans"] == str(782 - 4)  # type: ignore[index]
    assert metrics["partialSuccess"]["rejectedDataPoints"] == str(  # type: ignore[index]
        _points(SAMPLES / "codex" / "metrics.json")
    )
    assert logs["partialSuccess"]["rejectedLogRecords"] == "31"  # type: ignore[index]
    session = document(f"projects/{psy.project}/sessions/{CODEX_SESSION}")
    assert (session["source"], session["agents"]) == ("codex", ["codex_exec"])
    assert session["tool_errors"] == 3
    assert session["usage"] == {
        "input_tokens": 1200 + 1300 + 1400 + 1500,
        "output_tokens": 40 + 45 + 50 + 55,
        "cached_tokens": 0 + 200 + 400 + 600,
    }
    turns = session["turns"]
    assert (turns["open"], len(turns["closed"]), turns["last"]["failed"]) == ([], 1, False)
    errors = [event for event in psy.current_events(CODEX_SESSION) if event["type"] == "tool.error"]
    assert [event["data"]["error"] for event in errors] == ["exit code 2"] * 3
    assert {event["data"]["tool"] for event in errors} == {"exec_command"}


def test_a_codex_turn_cut_off_before_run_turn_ends_abnormally_though_its_root_span_closed(
    psy: Psychologist, configure: Configure
) -> None:
    """Codex's first trace export (512 spans, sent mid-turn) holds the turn's root
    `turn/start`, which ends 8 ms in, but not `run_turn`, which spans the turn's work: a
    run killed there, its logs sent, is a turn that never closed, never a normal end."""
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="2")
    _post_sample(psy, "codex", "logs")
    export = json.loads((SAMPLES / "codex" / "traces.json").read_bytes())
    first = {"resourceSpans": export["resourceSpans"][:1]}
    assert any(
        span["name"] == "turn/start" for span in first["resourceSpans"][0]["scopeSpans"][0]["spans"]
    )
    reply = requests.post(
        f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/traces",
        json=first,
        headers={"Authorization": f"Bearer {psy.member}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    assert wait_for(lambda: psy.sweep()["sessions"]) == [CODEX_SESSION]
    ended = document(f"projects/{psy.project}/sessions/{CODEX_SESSION}")
    assert (ended["state"], ended["cause"]) == ("closed_abnormally", "turn_never_closed")


def _points(path: Path) -> int:
    export = json.loads(path.read_bytes())
    return sum(
        len(
            next(iter(v for k, v in metric.items() if k in ("sum", "gauge", "histogram")))[
                "dataPoints"
            ]
        )
        for resource in export["resourceMetrics"]
        for scope in resource["scopeMetrics"]
        for metric in scope["metrics"]
    )
