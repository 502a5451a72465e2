"""POST /projects/{projectId}/sessions/{sessionId}/end: end a session (abnormal: analyse)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.psychologist import service
from functions.psychologist.access import psychologist_endpoint
from shared.http import handle

ENDPOINT = psychologist_endpoint("psychologist_session_end", role="member")


@functions_framework.http
def psychologist_session_end(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.end_session)
