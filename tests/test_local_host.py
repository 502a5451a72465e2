"""The local host delivers the emulator's document-created events to their triggers."""

from __future__ import annotations

import json
import time

import pytest
import requests

from shared.clients import db
from shared.retention import utcnow
from tests.api import Api, World, wait_for


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
    time.sleep(1.5)
    assert deliveries(capsys) == []


def test_the_host_serves_its_openapi_document(api: Api) -> None:
    reply = requests.get(api.base_url + "/openapi.json", timeout=10)
    assert reply.status_code == 200
    assert "/research-api/assistant/status" in reply.json()["paths"]
