"""GET /v1/orgs/{orgId}/agents/{id}/selection-report: how each chosen target's sessions ended."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_selection_report")


@functions_framework.http
def agentconnect_selection_report(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
