"""GET /v1/orgs/{orgId}/agents/{id}/model-evaluations/{seq} (contract): one frozen evaluation."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_evaluation_get")


@functions_framework.http
def agentconnect_evaluation_get(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
