"""The MCP server, driven by the official SDK's client over HTTP against the local host:
every tool listed with its schemas, results valid against them and equal to what the HTTP
API answers, and nothing an agent can do through MCP that its token cannot do over HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx
import requests
from jsonschema import Draft202012Validator
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from cli.gemini_stand_in import cited_research_answer
from functions.mcp.tools import TOOLS
from shared.validation import SCHEMA_REGISTRY, load_schema
from tests.api import Api, World, wait_for

T = TypeVar("T")


def over_mcp(api: Api, token: str, use: Callable[[ClientSession], Awaitable[T]]) -> T:
    async def go() -> T:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as client,
            streamable_http_client(f"{api.base_url}/mcp", http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return await use(session)

    return anyio.run(go)


def call(api: Api, token: str, name: str, arguments: dict[str, Any]) -> CallToolResult:
    async def use(session: ClientSession) -> CallToolResult:
        return await session.call_tool(name, arguments)

    return over_mcp(api, token, use)


REFUSAL = re.compile(r"\(code (\w+), request_id ([\w-]+)\)")


def refused_with(result: CallToolResult) -> str:
    """The API code a refused call names. A refusal is text a strict client can show: no
    structured content, which would have to fit the tool's output schema."""
    assert result.isError
    assert result.structuredContent is None
    text = result.content[0].text  # type: ignore[union-attr]
    found = REFUSAL.search(text)
    assert found is not None, text
    return found.group(1)


def completed_run(api: Api, world: World) -> tuple[str, dict[str, Any], str]:
    workspace = world.tenant()
    member = world.user(workspace, "ana", "member")
    conversation = api.post(
        "/research-api/conversations/create", {"workspace_id": workspace}, member
    ).json()["id"]
    items = api.post(
        "/research-api/evidence/upsert",
        {
            "workspace_id": workspace,
            "conversation_id": conversation,
            "items": [{"text": "Setup was slow and the wizard confusing."}],
        },
        member,
    ).json()["items"]
    world.gemini.answer_json(
        cited_research_answer([(items[0]["evidence_id"], items[0]["revision"])])
    )
    ids = {"workspace_id": workspace, "conversation_id": conversation}
    asked = call(
        api, member, "research_ask", {**ids, "request_kind": "overview", "idempotencyKey": "q1"}
    )
    assert not asked.isError, asked.content
    assert asked.structuredContent is not None
    status = {**ids, "run_id": asked.structuredContent["run"]["id"]}
    wait_for(
        lambda: (
            api.post("/research-api/assistant/status", status, member).json()["run"]["status"]
            == "completed"
        )
    )
    return member, status, workspace


def test_every_tool_is_listed_with_schemas_taken_from_the_published_ones(
    api: Api, world: World
) -> None:
    workspace = world.tenant()
    token = world.user(workspace, "vic", "viewer")

    async def use(session: ClientSession) -> Any:
        return await session.list_tools()

    listed = {tool.name: tool for tool in over_mcp(api, token, use).tools}
    assert set(listed) == {tool.name for tool in TOOLS}
    status = listed["sosoapi_research_assistant_status"]
    request = load_schema("research/status.request")
    assert status.inputSchema == {k: v for k, v in request.items() if k != "$schema"}
    assert status.outputSchema is not None
    assert set(status.outputSchema["properties"]) == set(
        load_schema("research/status.response")["properties"]
    )
    assert status.annotations is not None
    assert status.annotations.readOnlyHint is True
    decide = listed["psychologist_hypothesis_decide"].annotations
    assert decide is not None
    assert decide.readOnlyHint is False
    for tool in listed.values():
        Draft202012Validator.check_schema(tool.inputSchema)
        assert tool.outputSchema is not None
        Draft202012Validator.check_schema(tool.outputSchema)
        assert '"type": [' not in json.dumps(tool.outputSchema), tool.name


def test_the_status_tool_answers_what_the_http_status_answers_and_fits_the_contract(
    api: Api, world: World
) -> None:
    member, status, _ = completed_run(api, world)
    result = call(api, member, "sosoapi_research_assistant_status", status)
    assert not result.isError, result.content
    over_http = api.post("/research-api/assistant/status", status, member).json()
    assert result.structuredContent == over_http
    contract = Draft202012Validator(
        load_schema("research/status.response"), registry=SCHEMA_REGISTRY
    )
    assert list(contract.iter_errors(result.structuredContent)) == []


def test_a_tool_the_token_may_not_use_fails_with_the_http_code_and_a_request_id(
    api: Api, world: World
) -> None:
    project = world.tenant("project")
    viewer = world.user(project, "vic", "viewer", capabilities=("agent:psychologist",))
    arguments = {
        "projectId": project,
        "hypothesisId": "01JC4Z8QK3M7YV2N5T9B0PXHRA",
        "status": "accepted",
    }
    refused = call(api, viewer, "psychologist_hypothesis_decide", arguments)
    assert refused_with(refused) == "forbidden"
    assert "role" in refused.content[0].text  # type: ignore[union-attr]
    over_http = api.post(
        f"/projects/{project}/hypotheses/01JC4Z8QK3M7YV2N5T9B0PXHRA/decision",
        {"status": "accepted"},
        viewer,
    )
    assert over_http.status_code == 403


def test_another_tenants_token_gets_what_the_http_api_gives_it(api: Api, world: World) -> None:
    _, status, _ = completed_run(api, world)
    elsewhere = world.tenant()
    stranger = world.user(elsewhere, "eve", "member")
    result = call(api, stranger, "sosoapi_research_assistant_status", status)
    over_http = api.post("/research-api/assistant/status", status, stranger)
    assert over_http.status_code == 403
    assert refused_with(result) == over_http.json()["code"]


def test_a_bad_argument_is_refused_as_the_http_api_refuses_it(api: Api, world: World) -> None:
    workspace = world.tenant()
    token = world.user(workspace, "vic", "viewer")
    result = call(api, token, "sosoapi_research_assistant_status", {"workspace_id": "nope"})
    assert refused_with(result) == "invalid_request"
    assert "- workspace_id: " in result.content[0].text  # type: ignore[union-attr]


def test_a_missing_and_a_bad_token_are_each_401_saying_which(api: Api, world: World) -> None:
    token = world.user(world.tenant(), "vic", "viewer")
    listing: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    status_call: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "sosoapi_research_assistant_status", "arguments": {}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    reasons = set()
    for body in (listing, status_call):
        for sent in ({}, {"Authorization": "Bearer evd_nope"}, {"Authorization": token}):
            reply = requests.post(
                f"{api.base_url}/mcp", json=body, headers={**headers, **sent}, timeout=10
            )
            assert reply.status_code == 401
            assert reply.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
            reasons.add(reply.json()["error_description"])
    assert reasons == {
        "A bearer token is required: send Authorization: Bearer <token>.",
        "The bearer token is not valid: it is unknown, revoked or expired.",
    }


def test_every_tool_answers_with_content_its_output_schema_admits(api: Api, world: World) -> None:
    """Tools called as a strict MCP client would: each successful result's structured
    content validates against the tool's published output schema, and each refused call
    is an error result carrying the API's error code."""
    member, status, _ = completed_run(api, world)
    conversation = {k: status[k] for k in ("workspace_id", "conversation_id")}
    answered_run = api.post("/research-api/assistant/status", status, member).json()
    cited = answered_run["message"]["answer"]["answer"]["evidence"]
    project = world.tenant("project")
    vic = world.user(project, "vic", "viewer", capabilities=("agent:psychologist",))
    org = world.tenant("org")
    ola = world.user(org, "ola", "viewer", capabilities=("agent:connect",))
    agent = "497f6eca-6276-4993-bfeb-53cbbbba6f08"
    session = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
    answered = [
        (member, "research_evidence_upsert", {**conversation, "items": [{"text": "More."}]}),
        (member, "research_evidence_read", {**conversation, "items": cited}),
        (vic, "psychologist_calibration", {"projectId": project, "agenteAlvo": "dev-api"}),
        (vic, "psychologist_hypotheses_list", {"projectId": project, "limit": 5}),
        (
            vic,
            "psychologist_events_read",
            {"projectId": project, "sessionId": session, "ids": session},
        ),
        (ola, "agentconnect_evaluations_list", {"orgId": org, "id": agent}),
    ]
    outputs = {tool.name: tool.output_schema() for tool in TOOLS}
    for token, name, arguments in answered:
        result = call(api, token, name, arguments)
        assert not result.isError, (name, result.content)
        validator = Draft202012Validator(outputs[name], registry=SCHEMA_REGISTRY)
        assert list(validator.iter_errors(result.structuredContent)) == [], name
    refused = [
        (member, "research_cancel", status, "conflict"),
        (
            vic,
            "psychologist_analysis_get",
            {"projectId": project, "analysisId": session},
            "not_found",
        ),
        (ola, "agentconnect_evaluation_get", {"orgId": org, "id": agent, "seq": 1}, "not_found"),
        (
            vic,
            "psychologist_decisions_read",
            {"projectId": project, "hypothesisId": session},
            "not_found",
        ),
        (
            vic,
            "psychologist_effect_read",
            {"projectId": project, "hypothesisId": session},
            "not_found",
        ),
    ]
    for token, name, arguments, code in refused:
        assert refused_with(call(api, token, name, arguments)) == code, name


def test_hostile_bodies_with_a_good_token_are_refused_without_a_server_error(
    api: Api, world: World
) -> None:
    workspace = world.tenant()
    token = world.user(workspace, "vic", "viewer")
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    deep = "[" * 5000 + "]" * 5000
    call_with = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
        '"sosoapi_research_assistant_status","arguments":{"workspace_id":NaN}}}'
    )
    for raw in ("not json", deep, call_with, '{"jsonrpc":"2.0","id":1,"method":"nope"}'):
        reply = requests.post(f"{api.base_url}/mcp", data=raw, headers=headers, timeout=10)
        assert reply.status_code < 500, (raw[:40], reply.status_code, reply.text[:200])
        if reply.status_code == 200:
            assert "error" in reply.json() or reply.json()["result"]["isError"] is True
