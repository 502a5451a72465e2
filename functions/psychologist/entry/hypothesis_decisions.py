"""GET /projects/{projectId}/hypotheses/{hypothesisId}/decisions: the decision history."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_hypothesis_decisions")


@functions_framework.http
def psychologist_hypothesis_decisions(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
