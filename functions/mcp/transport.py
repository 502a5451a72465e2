"""The three APIs as MCP tools, over the official SDK's Streamable HTTP transport in
stateless mode with JSON responses, so that one request is one tool call and the function
needs no session state.

The bearer token of the HTTP request is the principal of every tool call: the SDK's
bearer middleware checks it with `verify_token` (a missing or bad token is 401 before any
tool runs), and each tool then goes through the same checks as its HTTP operation. A tool
call the token may not make fails with the code and `request_id` the HTTP API would give.

The SDK's ASGI app is served from this WSGI function (and from the local host, which
serves every function the same way) through `a2wsgi`; a plain tool call skips it
(`functions/mcp/calls.py`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import anyio
from a2wsgi import ASGIMiddleware
from mcp import types
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import Receive, Scope, Send

from functions.mcp.calls import error_result, tool_result
from functions.mcp.tools import BY_TOOL, TOOLS
from shared import auth
from shared.clients import db
from shared.errors import ApiError, ErrorCode
from shared.ids import new_uuid
from shared.jsonbody import JsonObject

SERVER = Server("evidencia")


class EvidenciaTokens:
    """The SDK's token-verification hook over Evidencia's own tokens."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            principal = await anyio.to_thread.run_sync(auth.authenticate, db(), token)
        except ApiError:
            return None
        return AccessToken(token=token, client_id=principal.user_id, scopes=[])


@SERVER.list_tools()  # type: ignore[untyped-decorator, no-untyped-call]
async def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            inputSchema=tool.input_schema(),
            outputSchema=tool.output_schema(),
            annotations=types.ToolAnnotations(
                readOnlyHint=tool.read_only,
                destructiveHint=False,
                idempotentHint=tool.read_only,
                openWorldHint=False,
            ),
        )
        for tool in TOOLS
    ]


@SERVER.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
async def call_tool(name: str, arguments: JsonObject) -> types.CallToolResult:
    tool = BY_TOOL.get(name)
    access = get_access_token()
    if tool is None or access is None:
        missing = ApiError(ErrorCode.NOT_FOUND, f"No tool is named {name}.")
        return types.CallToolResult.model_validate(error_result(missing, new_uuid()))
    result = await anyio.to_thread.run_sync(tool_result, tool, arguments, access.token)
    return types.CallToolResult.model_validate(result)


async def _transport(scope: Scope, receive: Receive, send: Send) -> None:
    """One stateless exchange: a fresh session manager runs for the one request."""
    manager = StreamableHTTPSessionManager(app=SERVER, stateless=True, json_response=True)
    async with manager.run():
        await manager.handle_request(scope, receive, send)


@cache
def wsgi_app() -> Any:
    """The SDK's ASGI app behind its bearer middleware, as a WSGI app."""
    app = AuthenticationMiddleware(
        AuthContextMiddleware(RequireAuthMiddleware(_transport, required_scopes=[])),
        backend=BearerAuthBackend(EvidenciaTokens()),
    )
    return ASGIMiddleware(app)  # type: ignore[arg-type]
