"""Log lines in Cloud Logging's structured format: a severity that follows the outcome, the
full URL, the request's trace and span, the request id as a label."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api import Api, World

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
TRACE = f"projects/demo-evidencia/traces/{TRACE_ID}"
LABELS = "logging.googleapis.com/labels"


def logged(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    out = capsys.readouterr().out.splitlines()
    return [json.loads(line) for line in out if line.startswith("{")]


def test_a_request_line_is_as_loud_as_its_outcome_and_names_the_full_url(
    api: Api, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    project = world.tenant("project")
    viewer = world.user(project, "vic", "viewer", capabilities=("agent:psychologist",))
    capsys.readouterr()
    listed = api.call("GET", f"/projects/{project}/hypotheses?limit=5", token=viewer)
    refused = api.call(
        "GET",
        f"/projects/{project}/hypotheses?limit=5",
        token=viewer,
        headers={"X-Cloud-Trace-Context": f"{TRACE_ID}/1;o=1"},
    )
    assert (listed.status_code, refused.status_code) == (200, 200)
    missing = api.call(
        "GET",
        f"/projects/{project}/analyses/01JC4Z8QK3M7YV2N5T9B0PXHRA",
        token=viewer,
        headers={"User-Agent": "evidencia-tests/1.0"},
    )
    assert missing.status_code == 404
    lines = [line for line in logged(capsys) if "httpRequest" in line]
    by_status = {line["httpRequest"]["status"]: line for line in lines}
    assert by_status[200]["severity"] == "INFO"
    assert by_status[200]["httpRequest"]["requestUrl"].endswith(
        f"/projects/{project}/hypotheses?limit=5"
    )
    assert by_status[404]["severity"] == "WARNING"
    assert by_status[404]["httpRequest"]["userAgent"] == "evidencia-tests/1.0"
    traced = [line for line in lines if "logging.googleapis.com/trace" in line]
    assert [line["logging.googleapis.com/spanId"] for line in traced] == ["0000000000000001"]
    assert all(line[LABELS]["request_id"] for line in lines)
