"""PUT /v1/orgs/{orgId}/agents/{id}/model-selection: store a new immutable version."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("agentconnect_selection_put")


@functions_framework.http
def agentconnect_selection_put(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
