"""The sessions read: a project's sessions, newest first, filtered by agent, state and
time, paged like the hypotheses, each row saying how the session ended, its events, tool
errors, tokens and cost, and its last analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from shared.validation import issues_for
from tests.psychologist.conftest import Psychologist

SAMPLES = Path(__file__).parents[1] / "telemetry_samples"
SAMPLES_SESSION = "636569f8-e7d1-4ef8-8161-d8b967051856"


def listed(psy: Psychologist, token: str | None = None, **query: Any) -> requests.Response:
    return psy.api.session.get(
        psy.api.base_url + psy.path("/sessions"),
        params=query,
        headers={"Authorization": f"Bearer {token or psy.viewer}"},
        timeout=30,
    )


def event(number: int, agent: str, kind: str = "tool.call") -> dict[str, Any]:
    return {
        "id": f"01JC4Z8QK3M7YV2N5T9B0PXH{number:02d}",
        "agent": agent,
        "type": kind,
        "at": f"2026-12-02T09:00:{number:02d}Z",
        "data": {"tool": "make", "error": "exit 2"},
    }


def send_gemini_cli_sample(psy: Psychologist) -> None:
    """A real Gemini CLI session's traces and logs, as its exporter sent them."""
    for signal in ("traces", "logs"):
        sample = requests.post(
            f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/{signal}",
            data=(SAMPLES / "gemini_cli" / f"{signal}.json").read_bytes(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {psy.member}"},
            timeout=30,
        )
        assert sample.status_code == 200, sample.text


def test_sessions_are_listed_newest_first_filtered_and_paged_with_what_they_cost(
    psy: Psychologist,
) -> None:
    assert psy.ingest("s-one", [event(1, "builder", "tool.error")]).status_code == 200
    assert psy.ingest("s-two", [event(2, "reviewer")]).status_code == 200
    assert psy.ingest("s-three", [event(3, "builder")]).status_code == 200
    assert psy.end("s-two", "closed_abnormally", "exit_code_2").status_code == 200
    send_gemini_cli_sample(psy)

    everything = listed(psy)
    assert everything.status_code == 200, everything.text
    rows = everything.json()
    assert issues_for("psychologist/sessions.response", rows) == []
    assert [row["sessionId"] for row in rows] == [SAMPLES_SESSION, "s-three", "s-two", "s-one"]
    gemini = rows[0]
    assert (gemini["source"], gemini["agents"], gemini["toolErrors"]) == (
        "gemini-cli",
        ["my-agent"],
        3,
    )
    assert gemini["usage"]["from"] == "requests"
    assert gemini["usage"]["inputTokens"] == 7731 + 7818 + 7905 + 7992
    ended = rows[2]
    assert (ended["state"], ended["cause"], ended["source"]) == (
        "closed_abnormally",
        "exit_code_2",
        None,
    )
    assert ended["lastAnalysisId"] is not None
    assert rows[3]["usage"] == {
        "inputTokens": 0,
        "outputTokens": 0,
        "cachedTokens": 0,
        "costUsd": None,
        "from": "none",
    }

    builders = [row["sessionId"] for row in listed(psy, agent="builder").json()]
    assert builders == ["s-three", "s-one"]
    abnormal = listed(psy, state="closed_abnormally").json()
    assert [row["sessionId"] for row in abnormal] == ["s-two"]
    both = listed(psy, agent="builder", state="open").json()
    assert [row["sessionId"] for row in both] == ["s-three", "s-one"]
    assert listed(psy, until="2000-01-01T00:00:00Z").json() == []
    assert len(listed(psy, since="2000-01-01T00:00:00Z").json()) == 4

    first = listed(psy, limit=3)
    token = first.headers["X-Next-Page-Token"]
    second = listed(psy, limit=3, pageToken=token)
    assert [row["sessionId"] for row in first.json() + second.json()] == [
        row["sessionId"] for row in rows
    ]
    assert "X-Next-Page-Token" not in second.headers


def test_the_sessions_read_refuses_an_unknown_page_token_and_an_outsider(
    psy: Psychologist,
) -> None:
    assert listed(psy, pageToken="bm90LWpzb24").status_code == 400
    elsewhere = psy.world.tenant("project")
    outsider = psy.world.user(elsewhere, "out", "admin", capabilities=("agent:psychologist",))
    assert listed(psy, token=outsider).status_code == 403


def test_a_sessions_row_counts_its_events_and_tool_errors_as_its_analysis_does_either_way_fed(
    psy: Psychologist,
) -> None:
    """One definition per figure: a session fed through the events API and one fed by a
    real agent's telemetry each show, in the sessions read, the events and tool errors its
    analysis counts in the log it read."""
    fed = [event(1, "builder", "tool.error"), event(2, "builder"), event(3, "builder")]
    fed += [event(4, "builder", "tool.error"), event(5, "builder", "tool.error")]
    assert psy.ingest("s-events", fed[:2]).status_code == 200
    assert psy.ingest("s-events", fed[2:]).status_code == 200
    send_gemini_cli_sample(psy)
    for session in ("s-events", SAMPLES_SESSION):
        assert psy.end(session, "closed").status_code == 200

    rows = {row["sessionId"]: row for row in listed(psy).json()}
    assert rows["s-events"]["toolErrors"] == 3
    assert rows[SAMPLES_SESSION]["toolErrors"] == 3
    for session in ("s-events", SAMPLES_SESSION):
        row = rows[session]
        counts = psy.settled(row["lastAnalysisId"])["counts"]
        assert (row["eventCount"], row["toolErrors"]) == (counts["events"], counts["toolErrors"])
