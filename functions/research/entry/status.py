"""POST /research-api/assistant/status (contract): read a run; never regenerates, never writes."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_status")


@functions_framework.http
def research_status(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
