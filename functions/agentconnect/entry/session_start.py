"""POST /v1/orgs/{orgId}/agents/{id}/sessions: allocate the next seq, hand out a session token."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.agentconnect import service
from functions.endpoints import endpoint
from shared.http import handle

ENDPOINT = endpoint("agentconnect_session_start")


@functions_framework.http
def agentconnect_session_start(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.start_session)
