"""PUT /v1/orgs/{orgId}/agents/{id}/model-selection: store a new immutable version."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.agentconnect import service
from functions.endpoints import endpoint
from shared.http import handle

ENDPOINT = endpoint("agentconnect_selection_put")


@functions_framework.http
def agentconnect_selection_put(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.put_selection)
