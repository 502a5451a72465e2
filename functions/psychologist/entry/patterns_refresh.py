"""POST /projects/{projectId}/patterns/refresh: queue a refresh of the patterns."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_patterns_refresh")


@functions_framework.http
def psychologist_patterns_refresh(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
