"""POST /projects/{projectId}/patterns/{patternId}/decision: accept or dismiss a pattern."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_pattern_decision")


@functions_framework.http
def psychologist_pattern_decision(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
