"""GET /research-api/runs/{runId}/citations: a completed run's statements with the exact
passages they rest on."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_citations")


@functions_framework.http
def research_citations(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
