"""GET /projects/{projectId}/patterns: a project's patterns, ranked."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_patterns_list")


@functions_framework.http
def psychologist_patterns_list(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
