"""GET /projects/{projectId}/patterns/refreshes/{refreshId}: read a refresh."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_pattern_refresh_get")


@functions_framework.http
def psychologist_pattern_refresh_get(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
