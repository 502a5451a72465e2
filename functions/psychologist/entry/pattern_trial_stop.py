"""POST .../patterns/{patternId}/trials/{trialId}/stop: end a pattern trial's assignment."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_pattern_trial_stop")


@functions_framework.http
def psychologist_pattern_trial_stop(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
