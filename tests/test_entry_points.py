"""`main.py` serves every registered entry point lazily, as functions-framework loads it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import functions_framework
import pytest
import requests

from cli.emulator import Emulator, free_port
from functions.registry import ENTRIES, http_entries
from tests.api import World

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORK = Path(sys.executable).with_name("functions-framework")


def imports_after(name: str) -> set[str]:
    code = f"import sys, main; main.{name}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


@pytest.mark.parametrize("entry", http_entries(), ids=lambda e: e.name)
def test_an_http_entry_point_does_not_import_gemini(entry) -> None:
    assert "google.genai" not in imports_after(entry.name)


def test_the_run_worker_does_import_gemini() -> None:
    assert "google.genai" in imports_after("research_run_worker")


def test_an_unknown_name_is_an_attribute_error() -> None:
    import main

    with pytest.raises(AttributeError, match="no entry point"):
        _ = main.no_such_function


@pytest.fixture
def served(emulator: Emulator) -> Iterator[dict[str, str]]:
    """Every registered name served by its own functions-framework process."""
    processes: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": emulator.host}
    for entry in ENTRIES:
        port = free_port()
        command = [
            str(FRAMEWORK),
            "--source",
            "main.py",
            "--target",
            entry.name,
            "--port",
            str(port),
        ]
        processes[entry.name] = (
            subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            ),
            port,
        )
    try:
        yield {name: f"http://127.0.0.1:{port}" for name, (_, port) in processes.items()}
    finally:
        for process, _ in processes.values():
            process.terminate()
            process.wait(timeout=10)


def first_answer(method: str, url: str, **kwargs: object) -> requests.Response:
    deadline = time.monotonic() + 30
    while True:
        try:
            return requests.request(method, url, timeout=10, **kwargs)  # type: ignore[arg-type]
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def filled(route: str) -> str:
    return re.sub(r"\{\w+\}", "01JC4Z8QK3M7YV2N5T9B0PXHRA", route)


def test_functions_framework_serves_every_registered_name(served: dict[str, str]) -> None:
    event_headers = {
        "ce-id": "1",
        "ce-specversion": "1.0",
        "ce-source": "test",
        "ce-type": "google.cloud.firestore.document.v1.created",
        "ce-document": "elsewhere/x",
        "Content-Type": "application/protobuf",
    }
    for entry in ENTRIES:
        url = served[entry.name]
        if entry.kind == "trigger":
            reply = first_answer("POST", url, data=b"", headers=event_headers)
            assert reply.status_code == 200, (entry.name, reply.text)
        elif entry.schedule is not None:
            reply = first_answer("POST", url + filled(entry.route or "/"))
            assert reply.status_code == 200, (entry.name, reply.text)
        else:
            for operation in entry.operations:
                kwargs = {"json": {}} if operation.method in ("POST", "PUT") else {}
                reply = first_answer(operation.method, url + filled(entry.route or "/"), **kwargs)
                assert reply.status_code == 401, (entry.name, reply.text)
                assert reply.json()["code"] == "unauthenticated"


def test_create_app_test_client_serves_the_status_contract(world: World) -> None:
    workspace = world.tenant()
    token = world.user(workspace, "vic", "viewer")
    client = functions_framework.create_app(
        target="research_status", source=str(ROOT / "main.py")
    ).test_client()
    body = {
        "workspace_id": workspace,
        "conversation_id": "11111111-1111-4111-8111-111111111111",
        "run_id": "11111111-1111-4111-8111-111111111111",
    }
    reply = client.post(
        "/research-api/assistant/status", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert reply.status_code == 404
    assert reply.get_json()["code"] == "not_found"
