"""GET /projects/{projectId}/sessions: a project's sessions, newest first, paged."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_sessions_list")


@functions_framework.http
def psychologist_sessions_list(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
