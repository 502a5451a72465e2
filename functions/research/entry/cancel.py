"""POST /research-api/assistant/cancel: stop a queued or processing run."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_cancel")


@functions_framework.http
def research_cancel(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
