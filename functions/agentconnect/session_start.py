"""POST /v1/orgs/{orgId}/agents/{id}/sessions: allocate the next seq, hand out a session token."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.agentconnect import service
from functions.agentconnect.access import connect_endpoint
from shared.http import handle

ENDPOINT = connect_endpoint("agentconnect_session_start", role="member")


@functions_framework.http
def agentconnect_session_start(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.start_session)
