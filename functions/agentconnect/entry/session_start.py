"""POST /v1/orgs/{orgId}/agents/{id}/sessions: allocate the next seq, hand out a session token."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_session_start")


@functions_framework.http
def agentconnect_session_start(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
