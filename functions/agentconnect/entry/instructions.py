"""PUT and GET /v1/orgs/{orgId}/agents/{id}/instructions: a new version, or the current one."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_instructions")


@functions_framework.http
def agentconnect_instructions(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
