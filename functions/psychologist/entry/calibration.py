"""GET /projects/{projectId}/calibration: acceptance at each band of self-reported confidence."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_calibration")


@functions_framework.http
def psychologist_calibration(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
