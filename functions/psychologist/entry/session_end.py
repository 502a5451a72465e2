"""POST /projects/{projectId}/sessions/{sessionId}/end: end a session (abnormal: analyse)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_session_end")


@functions_framework.http
def psychologist_session_end(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
