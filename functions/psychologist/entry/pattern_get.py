"""GET /projects/{projectId}/patterns/{patternId}: one pattern, with its members."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_pattern_get")


@functions_framework.http
def psychologist_pattern_get(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
