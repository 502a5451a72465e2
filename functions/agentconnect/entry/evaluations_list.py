"""GET /v1/orgs/{orgId}/agents/{id}/model-evaluations: frozen evaluations, newest first."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.agentconnect import service
from functions.endpoints import endpoint
from shared.http import handle

ENDPOINT = endpoint("agentconnect_evaluations_list")


@functions_framework.http
def agentconnect_evaluations_list(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.list_evaluations)
