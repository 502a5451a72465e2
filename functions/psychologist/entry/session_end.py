"""POST /projects/{projectId}/sessions/{sessionId}/end: end a session (abnormal: analyse)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import service
from shared.http import handle

ENDPOINT = endpoint("psychologist_session_end")


@functions_framework.http
def psychologist_session_end(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.end_session)
