"""/projects/{projectId}/sessions/{sessionId}/events: POST ingests a batch, GET reads for audit."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_session_events")


@functions_framework.http
def psychologist_session_events(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
