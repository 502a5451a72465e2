"""POST /projects/{projectId}/analyses: queue an analysis; its creation starts the worker."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_analysis_create")


@functions_framework.http
def psychologist_analysis_create(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
