"""POST .../trials/{trialId}/adopt: adopt an improved trial's suggestion."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_trial_adopt")


@functions_framework.http
def psychologist_trial_adopt(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
