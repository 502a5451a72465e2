"""GET /v1/orgs/{orgId}/agents/{id}/model-evaluations/{seq} (contract): one frozen evaluation."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.agentconnect import service
from functions.agentconnect.audience import audience_authorizer
from functions.endpoints import endpoint
from shared.http import handle

ENDPOINT = endpoint("agentconnect_evaluation_get")


@functions_framework.http
def agentconnect_evaluation_get(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.get_evaluation, audience_authorizer)
