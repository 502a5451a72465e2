"""POST /mcp: the MCP server behind the API's own body reader: a plain tool call answered at
once (`functions/mcp/calls.py`), every other message by the SDK's transport
(`functions/mcp/transport.py`, imported on the first such message)."""

from __future__ import annotations

import io
import json

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.mcp import calls
from shared import jsonbody
from shared.http import MAX_BODY_BYTES


def _refusal(why: str) -> flask.Response:
    """A JSON-RPC parse error for a body the API's own reader refuses (too large, too
    deep, NaN, lone surrogates...), before the SDK parses it."""
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": why}}
    return flask.Response(json.dumps(refusal), status=400, mimetype="application/json")


def _unauthenticated(why: str) -> flask.Response:
    """A 401 in the shape the SDK's bearer middleware sends (RFC 6750), with the reason."""
    body = {"error": "invalid_token", "error_description": why}
    response = flask.Response(json.dumps(body), status=401, mimetype="application/json")
    response.headers["WWW-Authenticate"] = (
        f'Bearer error="invalid_token", error_description="{why}"'
    )
    return response


@functions_framework.http
def mcp_server(request: flask.Request) -> ResponseReturnValue:
    raw = request.stream.read(MAX_BODY_BYTES + 1) if request.method == "POST" else b""
    if raw:
        if len(raw) > MAX_BODY_BYTES:
            return _refusal("The body is larger than 1 MiB.")
        try:
            message = jsonbody.parse(raw)
        except jsonbody.JsonBodyError as error:
            return _refusal(str(error))
    why = calls.unauthenticated(request.headers)
    if why is not None:
        return _unauthenticated(why)
    if raw:
        answered = calls.answer(request.headers, message)
        if answered is not None:
            return flask.Response(answered, status=200, mimetype="application/json")
    from functions.mcp.transport import wsgi_app

    request.environ["wsgi.input"] = io.BytesIO(raw)
    request.environ["CONTENT_LENGTH"] = str(len(raw))
    return flask.Response.from_app(wsgi_app(), request.environ)
