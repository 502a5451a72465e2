"""The local host delivers the emulator's document-created events to their triggers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from cli.console import CONTENT_SECURITY_POLICY
from cli.emulator import Emulator, free_port
from cli.host import SECRET_HEADER, LocalHost, trigger_id
from shared.clients import db
from shared.retention import utcnow
from tests.api import Api, Configure, World, created_event, redeliver, wait_for
from tests.test_serve_hygiene import EVIDENCIA, ROOT, environment


def deliveries(capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    lines = [
        json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")
    ]
    return [line for line in lines if line.get("message") == "Event delivered"]


def test_a_document_under_a_trigger_path_runs_its_trigger_once(
    api: Api, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = world.tenant()
    capsys.readouterr()
    run = db().collection("workspaces").document(workspace).collection("runs").document("r-1")
    run.set({"status": "cancelled", "expires_at": utcnow()})
    seen = wait_for(lambda: deliveries(capsys) or None)
    assert [d["document"] for d in seen] == [f"workspaces/{workspace}/runs/r-1"]

    db().collection("workspaces").document(workspace).collection("notes").document("n").set(
        {"a": 1}
    )
    run.update({"status": "queued"})
    later = db().collection("workspaces").document(workspace).collection("runs").document("r-2")
    later.set({"status": "cancelled", "expires_at": utcnow()})
    seen = wait_for(lambda: deliveries(capsys) or None)
    assert [d["document"] for d in seen] == [f"workspaces/{workspace}/runs/r-2"]


def test_the_host_serves_its_openapi_document(api: Api) -> None:
    reply = requests.get(api.base_url + "/openapi.json", timeout=10)
    assert reply.status_code == 200
    assert "/research-api/assistant/status" in reply.json()["paths"]


def test_a_trigger_acknowledges_and_logs_an_event_it_cannot_decode(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    headers = {
        "ce-id": "undecodable-1",
        "ce-specversion": "1.0",
        "ce-source": "//firestore.googleapis.com/projects/demo-evidencia/databases/(default)",
        "ce-type": "google.cloud.firestore.document.v1.created",
        "Content-Type": "application/protobuf",
    }
    trigger = trigger_id("research_run_worker", api.secret)
    url = f"{api.base_url}/functions/projects/demo-evidencia/triggers/{trigger}"
    capsys.readouterr()
    reply = api.session.post(url, data=b"\xff not protobuf, not base64", headers=headers)
    assert reply.status_code == 200
    dropped = dropped_events(capsys)
    assert [(d["message"], d["event_id"]) for d in dropped] == [
        ("Dropped an event that cannot be decoded", "undecodable-1")
    ]


@pytest.mark.parametrize(
    ("trigger", "document"),
    [
        ("research_run_worker", "workspaces/w-gone/runs/r-gone"),
        ("psychologist_analysis_worker", "projects/p-gone/analyses/a-gone"),
        ("agentconnect_evaluation_worker", "orgs/o-gone/agents/a-gone/agent_sessions/s-gone"),
    ],
)
def test_a_trigger_acknowledges_and_logs_an_event_whose_document_is_gone(
    api: Api, capsys: pytest.CaptureFixture[str], trigger: str, document: str
) -> None:
    capsys.readouterr()
    assert redeliver(api, trigger, document) == 200
    dropped = dropped_events(capsys)
    assert [(d["message"], d["document"]) for d in dropped] == [
        ("Dropped an event whose document is gone", document)
    ]


def dropped_events(capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    """The host's warnings of events it dropped. Only those: the host is the worker's, and
    a delivery the emulator sends it meanwhile for a trigger an earlier host registered
    (a delivery probe's) is logged as a 404 beside them."""
    return [
        line
        for line in logged(capsys)
        if line["severity"] == "WARNING" and line["message"].startswith("Dropped an event")
    ]


def logged(capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    out = capsys.readouterr().out.splitlines()
    return [json.loads(line) for line in out if line.startswith("{")]


def test_private_routes_answer_only_the_hosts_own_callers(api: Api) -> None:
    """Sweeps need the host's secret; trigger deliveries are served only at the path the
    emulator was given. Anyone else on the port gets the API's 404."""
    for route in ("/internal/research/sweep", "/internal/psychologist/sweep"):
        refused = api.call("POST", route)
        assert refused.status_code == 404
        assert refused.json()["code"] == "not_found"
        wrong = api.call("POST", route, headers={SECRET_HEADER: "guess"})
        assert wrong.status_code == 404
        assert api.private(route).status_code == 200
    data, headers = created_event("workspaces/w/runs/r")
    forged = api.session.post(
        f"{api.base_url}/functions/projects/demo-evidencia/triggers/research_run_worker",
        data=data,
        headers=headers,
    )
    assert forged.status_code == 404
    assert forged.json()["request_id"] == forged.headers["x-request-id"]


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "PATCH"])
def test_a_method_an_operation_does_not_serve_gets_405_with_allow(api: Api, method: str) -> None:
    for path, allowed in (("/research-api/assistant/status", "POST"), ("/openapi.json", "GET")):
        reply = api.call(method, path)
        assert reply.status_code == 405, reply.text
        assert reply.headers["Allow"].split(", ")[0] == allowed
        assert reply.json()["code"] == "method_not_allowed"
        assert reply.json()["request_id"] == reply.headers["x-request-id"]


def test_an_oversized_request_line_gets_the_apis_json_error(api: Api) -> None:
    reply = requests.get(api.base_url + "/research-api/" + "x" * 70_000, timeout=10)
    assert reply.status_code == 414
    assert reply.json()["request_id"] == reply.headers["x-request-id"]
    assert reply.json()["error"] == "Request-URI Too Long"


def test_the_host_serves_the_console_at_its_root_with_its_policy(api: Api) -> None:
    page = requests.get(api.base_url + "/", timeout=10)
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert '<script type="module" src="/assets/app.js">' in page.text
    script = requests.get(api.base_url + "/assets/app.js", timeout=10)
    assert script.status_code == 200
    assert "javascript" in script.headers["Content-Type"]


def test_the_console_serves_only_its_own_files(api: Api) -> None:
    for path in ("/assets/../../pyproject.toml", "/assets/%2e%2e/index.html", "/assets/none.js"):
        reply = requests.get(api.base_url + path, timeout=10)
        assert reply.status_code == 404, path
        assert reply.json()["code"] == "not_found"


@contextmanager
def host_process(env: dict[str, str], *flags: str) -> Iterator[tuple[Emulator, list[str]]]:
    """`evidencia serve FLAGS` as `make run` starts it, stopped on leaving by Ctrl-C as a
    terminal sends it (to the whole process group): its emulator and what it printed once
    started (more is appended as it stops)."""
    process = subprocess.Popen(
        [str(EVIDENCIA), "serve", "--port", str(free_port()), *flags],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stderr is not None
    said: list[str] = []
    try:
        for line in process.stderr:
            said.append(line)
            if line.startswith("Private routes"):
                break
        host = next(x for x in said if x.startswith("FIRESTORE_EMULATOR_HOST="))
        yield Emulator(host.split("=", 1)[1].strip()), said
    finally:
        os.killpg(process.pid, signal.SIGINT)
        said.extend(process.stderr)
        process.wait(timeout=60)
        process.stderr.close()


def put(emulator: Emulator, path: str) -> None:
    documents = f"{emulator.base_url}/v1/projects/{emulator.project_id}/databases/(default)"
    request = urllib.request.Request(
        f"{documents}/documents/{path}",
        data=b'{"fields": {"name": {"stringValue": "kept"}}}',
        method="PATCH",
        headers={"Authorization": "Bearer owner", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200


def test_a_host_with_a_data_folder_keeps_its_documents_across_a_restart_and_clean_wipes_them(
    tmp_path: Path,
) -> None:
    env = environment(tmp_path)
    data = tmp_path / "data"
    with host_process(env, "--data", str(data)) as (first, said):
        assert any(line.startswith("Local data: started empty") for line in said), said
        put(first, "orgs/kept-org")
    assert f"Local data: kept in {data} for the next start\n" in said
    with host_process(env, "--data", str(data)) as (second, said):
        assert any(line.startswith(f"Local data: restored from {data}") for line in said), said
        assert second.document_exists("orgs/kept-org")
        assert "started empty" not in refused_token_message(said)
    with host_process(env, "--data", str(data), "--clean") as (third, said):
        assert any(line.startswith("Local data: started empty") for line in said), said
        assert not third.document_exists("orgs/kept-org")
        hint = refused_token_message(said)
        assert hint.startswith("The token is invalid, expired or revoked. If it was made before ")
        assert "this local host started empty at " in hint
        assert "admin token create" in hint


def refused_token_message(said: list[str]) -> str:
    """What the host on the banner's URL answers a token it does not hold."""
    [banner] = [line for line in said if line.startswith("Evidencia local host: ")]
    reply = requests.get(
        banner.split(": ", 1)[1].strip() + "/v1/whoami",
        headers={"Authorization": "Bearer evd_unknown_secret"},
        timeout=10,
    )
    assert reply.status_code == 401
    message: str = reply.json()["message"]
    return message


def test_a_host_without_a_data_folder_says_its_documents_go_with_it(tmp_path: Path) -> None:
    with host_process(environment(tmp_path)) as (_, said):
        assert any(line.startswith("Local data: not kept") for line in said), said
    assert list(tmp_path.glob("**/*.overall_export_metadata")) == []


def test_the_delivery_probe_waits_its_own_time_not_a_requests_bound(
    host: LocalHost, configure: Configure
) -> None:
    """`evidencia serve` probes an emulator it did not start: the first write to one just
    started, on a busy machine, took longer than a request's 5 s, and serve stopped with a
    traceback. The probe's write is bounded by the probe's own time."""
    configure(FIRESTORE_TIMEOUT_S="0.0001")
    assert host.delivered_probe(timeout=10)
