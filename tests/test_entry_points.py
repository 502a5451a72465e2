"""`main.py` serves every registered entry point lazily, as functions-framework loads it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from functions.registry import (
    BY_NAME,
    Entry,
    RestEntry,
    public_entries,
    rest_entries,
    scheduled_entries,
)
from tests.api import World, function_client

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORK = Path(sys.executable).with_name("functions-framework")


PROBE = """
import json, os, sys

import flask, google.cloud.firestore, jsonschema, pydantic

assert not {"google.genai", "mcp"} & set(sys.modules)
found = {}
for name in sys.argv[1:]:
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        import main

        getattr(main, name)
        os.write(write, " ".join(sorted(sys.modules)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        found[name] = pipe.read().decode().split()
    os.wait()
print(json.dumps(found))
"""
"""One interpreter that forks a fresh child per entry point: each child imports `main`
and its one entry, as a cold start does, and reports every module it then holds. The
libraries the checks do not ask about (neither Gemini's nor the MCP SDK, which the
parent is checked not to hold) are imported once, before the forks, not once a child."""


@cache
def imports_by_entry() -> dict[str, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *BY_NAME],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return {name: set(modules) for name, modules in json.loads(out.stdout).items()}


def imports_after(name: str) -> set[str]:
    return imports_by_entry()[name]


@pytest.mark.parametrize("entry", public_entries(), ids=lambda e: e.name)
def test_a_public_entry_point_does_not_import_gemini(entry: Entry) -> None:
    assert "google.genai" not in imports_after(entry.name)


def test_the_psychologist_sweep_imports_gemini_to_poll_its_batches() -> None:
    assert "google.genai" in imports_after("psychologist_sweep")


@pytest.mark.parametrize("entry", rest_entries() + scheduled_entries(), ids=lambda e: e.name)
def test_no_rest_or_scheduled_entry_point_imports_the_mcp_sdk(entry: Entry) -> None:
    assert "mcp" not in imports_after(entry.name)


def test_the_mcp_server_starts_without_the_sdk_which_it_imports_for_a_message_that_needs_it() -> (
    None
):
    """A plain tool call is answered without it (tests/test_mcp_calls.py); `initialize`
    and the rest import it on the instance's first such message (tests/test_mcp.py)."""
    assert "mcp" not in imports_after("mcp_server")
    assert "functions.mcp.calls" in imports_after("mcp_server")


def test_the_run_worker_does_import_gemini() -> None:
    assert "google.genai" in imports_after("research_run_worker")


@pytest.mark.pure
def test_an_unknown_name_is_an_attribute_error() -> None:
    import main

    with pytest.raises(AttributeError, match="no entry point"):
        _ = main.no_such_function


def test_create_app_test_client_serves_the_status_contract(world: World) -> None:
    workspace = world.tenant()
    token = world.user(workspace, "vic", "viewer")
    client = function_client("research_status")
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


def _filled(route: str) -> str:
    return re.sub(r"\{(\w+)\}", "01JC4Z8QK3M7YV2N5T9B0PXHRA", route)


@pytest.mark.pure
@pytest.mark.parametrize("entry", rest_entries(), ids=lambda e: e.name)
def test_each_http_function_answers_at_its_own_url_and_at_its_public_path(
    entry: RestEntry,
) -> None:
    """A deployed function is called at its own URL: `/` when its route takes no path
    parameters (and its public path, which is how path parameters are passed)."""
    client = function_client(entry.name)
    route = entry.route
    paths = [_filled(route)] + ([] if "{" in route else ["/"])
    method = entry.operations[0].method
    body: dict[str, Any] | None = {} if method in ("POST", "PUT") else None
    for path in paths:
        reply = client.open(path, method=method, json=body)
        assert reply.status_code != 404 or reply.get_json()["message"] != (
            f"No operation is served at {path}."
        ), path
        assert reply.status_code in (400, 401, 403, 404, 409), (path, reply.get_json())
    assert client.open("/nowhere", method=method, json=body).status_code == 404
