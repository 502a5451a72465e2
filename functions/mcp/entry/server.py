"""POST /mcp: the MCP server (`functions/mcp/transport.py`) behind the API's own body reader."""

from __future__ import annotations

import io
import json

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.mcp.transport import wsgi_app
from shared import jsonbody
from shared.http import MAX_BODY_BYTES


def _refused(raw: bytes) -> flask.Response | None:
    """A JSON-RPC parse error for a body the API's own reader refuses (too large, too
    deep, NaN, lone surrogates...), before the SDK parses it; None when it may pass."""
    if len(raw) > MAX_BODY_BYTES:
        why = "The body is larger than 1 MiB."
    else:
        try:
            jsonbody.parse(raw)
        except jsonbody.JsonBodyError as error:
            why = str(error)
        else:
            return None
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": why}}
    return flask.Response(json.dumps(refusal), status=400, mimetype="application/json")


@functions_framework.http
def mcp_server(request: flask.Request) -> ResponseReturnValue:
    raw = request.stream.read(MAX_BODY_BYTES + 1) if request.method == "POST" else b""
    refused = _refused(raw) if raw else None
    if refused is not None:
        return refused
    request.environ["wsgi.input"] = io.BytesIO(raw)
    request.environ["CONTENT_LENGTH"] = str(len(raw))
    return flask.Response.from_app(wsgi_app(), request.environ)
