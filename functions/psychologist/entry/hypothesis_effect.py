"""GET /projects/{projectId}/hypotheses/{hypothesisId}/effect: how the agent's sessions went
before and after the hypothesis was accepted."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_hypothesis_effect")


@functions_framework.http
def psychologist_hypothesis_effect(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
