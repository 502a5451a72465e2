"""A plain tool call is answered without the SDK's transport, with what the transport
would answer; every other message, and every request the transport would refuse, still
reaches the SDK and gets its answer."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests
from mcp.server.streamable_http import CONTENT_TYPE_JSON
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from mcp.types import DEFAULT_NEGOTIATED_VERSION
from werkzeug.datastructures import Headers
from werkzeug.test import Client

from functions.mcp import calls
from functions.mcp.transport import wsgi_app
from tests.api import Api, World
from tests.test_mcp import completed_run

STATUS = "sosoapi_research_assistant_status"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tool_call(name: str, arguments: dict[str, Any], request_id: int | str = 7) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def over_http(api: Api, token: str | None, body: Any, **headers: str) -> requests.Response:
    sent = {**HEADERS, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return requests.post(f"{api.base_url}/mcp", json=body, headers=sent, timeout=30)


def through_the_sdk(token: str, body: Any) -> Any:
    """The SDK's own transport answering the same request, with nothing in front of it."""
    reply = Client(wsgi_app()).post(
        "/mcp", json=body, headers={**HEADERS, "Authorization": f"Bearer {token}"}
    )
    assert reply.status_code == 200, reply.get_data(as_text=True)
    return json.loads(reply.get_data())


def answered_here(token: str, body: Any) -> bytes | None:
    return calls.answer(Headers({**HEADERS, "Authorization": f"Bearer {token}"}), body)


def without_request_ids(response: Any) -> Any:
    """A response with the per-call `request_id` of a refusal's text taken out."""
    result = response["result"]
    if result["isError"]:
        text = result["content"][0]["text"]
        result["content"][0]["text"] = re.sub(r"request_id [\w-]+", "request_id -", text)
    return response


def test_a_plain_tool_call_is_answered_as_the_sdks_transport_answers_it(
    api: Api, world: World
) -> None:
    member, status, _ = completed_run(api, world)
    outsider = world.user(world.tenant(), "eve", "member")
    for token, body in (
        (member, tool_call(STATUS, status)),
        (member, tool_call(STATUS, status, request_id="abc")),
        (member, tool_call(STATUS, {"workspace_id": "nope"})),
        (outsider, tool_call(STATUS, status)),
    ):
        assert answered_here(token, body) is not None
        fast = over_http(api, token, body)
        assert fast.status_code == 200
        assert fast.headers["Content-Type"] == CONTENT_TYPE_JSON
        assert without_request_ids(fast.json()) == without_request_ids(through_the_sdk(token, body))


@pytest.mark.pure
def test_the_protocol_versions_answered_here_are_the_sdks() -> None:
    assert set(calls.PROTOCOL_VERSIONS) <= set(SUPPORTED_PROTOCOL_VERSIONS)
    assert calls.UNSTATED_VERSION == DEFAULT_NEGOTIATED_VERSION


def test_what_the_transport_refuses_is_still_refused_by_it(api: Api, world: World) -> None:
    member, status, _ = completed_run(api, world)
    call = tool_call(STATUS, status)
    assert over_http(api, None, call).status_code == 401
    assert over_http(api, "evd_nope", call).status_code == 401
    assert over_http(api, member, call, **{"mcp-protocol-version": "1999-01-01"}).status_code == 400
    assert over_http(api, member, call, Accept="text/event-stream").status_code == 406
    for content_type, refused in (("text/plain, application/json", 400), ("Application/JSON", 415)):
        assert over_http(api, member, call, **{"Content-Type": content_type}).status_code == (
            refused
        )


def test_other_messages_and_other_call_shapes_reach_the_sdk(api: Api, world: World) -> None:
    member, status, _ = completed_run(api, world)
    listed = over_http(api, member, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert {tool["name"] for tool in listed.json()["result"]["tools"]} >= {STATUS}
    with_meta = tool_call(STATUS, status)
    with_meta["params"]["_meta"] = {"progressToken": 1}
    assert answered_here(member, with_meta) is None
    answered = over_http(api, member, with_meta).json()
    assert answered["result"]["structuredContent"]["run"]["status"] == "completed"
    unknown = over_http(api, member, tool_call("no_such_tool", {})).json()
    assert unknown["result"]["isError"] is True
    assert "(code not_found, request_id " in unknown["result"]["content"][0]["text"]
