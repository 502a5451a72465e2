"""POST /research-api/assistant/ask: queue a run; the run worker takes it from its create event."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_ask")


@functions_framework.http
def research_ask(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
