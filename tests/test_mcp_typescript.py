"""The MCP server driven by another real client: the official TypeScript SDK
(`@modelcontextprotocol/sdk`, pinned in `tests/mcp_client/package-lock.json`) under
Node.js, installed from the npm registry with `npm ci` when it is not there yet."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from functions.mcp.tools import TOOLS
from tests.api import Api, World
from tests.npm_locked import npm_ci
from tests.test_mcp import REFUSAL

CLIENT = Path(__file__).with_name("mcp_client")
HYPOTHESIS = "01JC4Z8QK3M7YV2N5T9B0PXHRA"


@pytest.fixture(scope="module")
def node() -> str:
    """Node.js with the client's locked packages installed."""
    found = shutil.which("node")
    assert found is not None, "the TypeScript MCP client's test needs Node.js 20 or newer"
    npm_ci(CLIENT, "installing the TypeScript MCP client")
    return found


def over_typescript(node: str, api: Api, token: str, calls: list[dict[str, Any]]) -> Any:
    finished = subprocess.run(
        [node, "client.mjs", f"{api.base_url}/mcp", token, json.dumps(calls)],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


def test_the_typescript_sdk_client_lists_calls_and_shows_a_refusals_text(
    node: str, api: Api, world: World
) -> None:
    """The TypeScript client initialises, lists every tool with its schemas, gets a
    successful call's structured result, and a refused call as an error whose text names
    the API code and request id."""
    project = world.tenant("project")
    viewer = world.user(project, "vic", "viewer", capabilities=("agent:psychologist",))
    decide = {"projectId": project, "hypothesisId": HYPOTHESIS, "status": "accepted"}
    got = over_typescript(
        node,
        api,
        viewer,
        [
            {"name": "whoami", "arguments": {}},
            {"name": "psychologist_hypothesis_decide", "arguments": decide},
        ],
    )
    assert got["server"]["name"]
    listed = {tool["name"]: tool for tool in got["tools"]}
    assert set(listed) == {tool.name for tool in TOOLS}
    assert listed["psychologist_hypothesis_decide"]["annotations"]["readOnlyHint"] is False

    whoami, refused = got["results"]
    assert whoami.get("isError") is not True, whoami
    assert whoami["structuredContent"]["userId"] == "vic"
    assert whoami["structuredContent"]["capabilities"] == ["agent:psychologist"]
    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    found = REFUSAL.search(text)
    assert found is not None, text
    assert found.group(1) == "forbidden"
