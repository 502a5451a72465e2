"""One trace from the ask to the settled run, in the log lines of every step, each labelled
with the run's id."""

from __future__ import annotations

import pytest

from tests.research.conftest import Research
from tests.test_logging import LABELS, TRACE, TRACEPARENT, logged


def test_a_failed_run_logs_one_trace_from_ask_to_settle_with_the_run_id(
    research: Research, capsys: pytest.CaptureFixture[str]
) -> None:
    research.world.gemini.fail(503, times=3)
    capsys.readouterr()
    asked = research.api.call(
        "POST",
        "/research-api/assistant/ask",
        research.body(request_kind="overview"),
        research.member,
        headers={"traceparent": TRACEPARENT},
    )
    run_id = asked.json()["run"]["id"]
    assert research.settled(run_id)["run"]["failure_code"] == "provider_unavailable"
    lines = [line for line in logged(capsys) if line.get(LABELS, {}).get("run_id") == run_id]
    messages = [line["message"] for line in lines]
    assert "POST /research-api/assistant/ask 202" in messages
    assert "Run settled" in messages
    assert {line.get("logging.googleapis.com/trace") for line in lines} == {TRACE}
    settled = next(line for line in lines if line["message"] == "Run settled")
    assert settled["severity"] == "WARNING"
    assert settled["failure_code"] == "provider_unavailable"
    assert "503" in settled["cause"]
    assert all(line["time"].startswith("20") for line in lines)
