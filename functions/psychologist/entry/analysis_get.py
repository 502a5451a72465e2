"""GET /projects/{projectId}/analyses/{analysisId}: status, counts, usage, rejected hypotheses."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_analysis_get")


@functions_framework.http
def psychologist_analysis_get(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
