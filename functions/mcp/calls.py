"""A tool call's result as MCP carries it, and the one message answered without the SDK.

The SDK's Streamable HTTP transport serves every MCP message (`functions/mcp/transport.py`),
but importing it costs an instance about half a second (`mcp/__init__` imports the client,
the stdio transports and FastMCP) and each call crosses an ASGI event loop in another
thread. A lone `tools/call` in the plain shape agents send, with headers and a token the
transport would admit, is answered here instead, in the request's own thread, with the
bytes the transport would send. A request without a token that authenticates is refused
first, saying which it lacks. Anything else (initialize, tools/list, notifications,
batches, a call carrying `_meta`, a header the transport refuses) goes to the SDK, which
gives its own answer or error. This module imports nothing from the SDK;
`tests/test_mcp.py` holds its answers equal to the transport's for the same requests and
its protocol versions among the SDK's.
"""

from __future__ import annotations

import json
from typing import Any

from werkzeug.datastructures import Headers

from functions.mcp.tools import BY_TOOL, Tool
from shared import auth, logs
from shared.clients import db
from shared.errors import ApiError
from shared.http import as_api_error, checked_call
from shared.ids import new_uuid
from shared.jsonbody import JsonObject

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The `mcp-protocol-version` values answered here; the transport takes these and says
which it takes when refusing another."""
UNSTATED_VERSION = "2025-03-26"
"""The version a request without the header is taken to speak, as the transport takes it."""
JSON = "application/json"


def error_text(error: ApiError, request_id: str) -> str:
    """What a person or an agent reads of a refused call: the API's message, its code and
    request id, and each rule the arguments broke."""
    lines = [f"{error.message} (code {error.code.value}, request_id {request_id})"]
    lines += [
        f"- {'.'.join(str(part) for part in issue['path']) or '(the arguments)'}: "
        f"{issue['message']}"
        for issue in error.issues or []
    ]
    return "\n".join(lines)


def error_result(error: ApiError, request_id: str) -> JsonObject:
    """A refused call as text alone: structured content would have to fit the tool's output
    schema, which describes the answer, and strict clients check it even on errors."""
    return {
        "content": [{"type": "text", "text": error_text(error, request_id)}],
        "isError": True,
    }


def _answer(tool: Tool, arguments: JsonObject, token: str, request_id: str) -> Any:
    """What the tool's HTTP operation answers, run through the same checks; raises
    `ApiError` as the operation would."""
    body, params, headers = tool.split(arguments)
    with logs.scope(request_id=request_id, tool=tool.name):
        call = checked_call(
            tool.endpoint, tool.authorizer, token, body, params, request_id, headers
        )
        reply = tool.handler(call)
        logs.info(f"MCP {tool.name}", status=reply.status)
    if tool.listed_as is None:
        return reply.body
    page = tool.operation.page_header
    return {tool.listed_as: reply.body, "nextPageToken": reply.headers.get(page) if page else None}


def tool_result(tool: Tool, arguments: JsonObject, token: str) -> JsonObject:
    """The `CallToolResult` of one call, as JSON: the answer as structured content and as
    text, or the API's error as an error result."""
    request_id = new_uuid()
    try:
        result = _answer(tool, arguments, token, request_id)
    except ApiError as error:
        return error_result(error, request_id)
    except Exception as error:  # noqa: BLE001 - a fault is the caller's, as over HTTP
        return error_result(as_api_error(error), request_id)
    return {
        "content": [{"type": "text", "text": json.dumps(result)}],
        "structuredContent": result,
        "isError": False,
    }


def _admitted_headers(headers: Headers) -> bool:
    """Whether the transport (JSON responses, stateless) would take these headers."""
    accepts = [media.strip() for media in headers.get("Accept", "").split(",")]
    content_type = headers.get("Content-Type", "")
    parts = content_type.split(";")[0].split(",")
    version = headers.get("mcp-protocol-version", UNSTATED_VERSION)
    return (
        content_type.lower().startswith(JSON)
        and any(part.strip() == JSON for part in parts)
        and any(media.startswith(JSON) for media in accepts)
        and version in PROTOCOL_VERSIONS
    )


NO_BEARER = "A bearer token is required: send Authorization: Bearer <token>."
BAD_BEARER = "The bearer token is not valid: it is unknown, revoked or expired."


def _token(headers: Headers) -> str | None:
    value = headers.get("Authorization", "")
    return value[7:] if value.lower().startswith("bearer ") else None


def unauthenticated(headers: Headers) -> str | None:
    """Why the request has no principal, in words that tell a missing token from one that
    does not authenticate; None when its token authenticates."""
    token = _token(headers)
    if token is None:
        return NO_BEARER
    try:
        auth.authenticate(db(), token)
    except ApiError:
        return BAD_BEARER
    return None


def _plain_call(message: Any) -> tuple[Any, Tool, JsonObject] | None:
    """(id, tool, arguments) of a lone `tools/call` with nothing else in it."""
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = message["id"], message["params"]
    if (
        message["jsonrpc"] != "2.0"
        or message["method"] != "tools/call"
        or isinstance(request_id, bool)
        or not isinstance(request_id, int | str)
        or not isinstance(params, dict)
        or not set(params) <= {"name", "arguments"}
        or not isinstance(params.get("arguments", {}), dict)
    ):
        return None
    name = params.get("name")
    tool = BY_TOOL.get(name) if isinstance(name, str) else None
    return (request_id, tool, params.get("arguments", {})) if tool is not None else None


def answer(headers: Headers, message: Any) -> bytes | None:
    """The JSON-RPC response to a plain tool call from an authenticated request (see
    `unauthenticated`), or None for the SDK to serve."""
    call = _plain_call(message)
    token = _token(headers)
    if call is None or token is None or not _admitted_headers(headers):
        return None
    request_id, tool, arguments = call
    response = {"jsonrpc": "2.0", "id": request_id, "result": tool_result(tool, arguments, token)}
    return json.dumps(response, ensure_ascii=False, separators=(",", ":")).encode()
