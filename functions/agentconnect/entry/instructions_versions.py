"""GET /v1/orgs/{orgId}/agents/{id}/instructions/versions: every version, newest first."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_instructions_versions")


@functions_framework.http
def agentconnect_instructions_versions(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
