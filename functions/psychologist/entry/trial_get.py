"""GET .../hypotheses/{hypothesisId}/trials/{trialId}: a trial, its arms and verdict."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_trial_get")


@functions_framework.http
def psychologist_trial_get(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
