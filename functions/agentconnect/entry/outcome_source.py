"""PUT, GET and DELETE /v1/orgs/{orgId}/agents/{id}/outcome-source: where the agent's
sessions are logged."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_outcome_source")


@functions_framework.http
def agentconnect_outcome_source(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
