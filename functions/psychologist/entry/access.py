"""GET /projects/{projectId}/access: the caller's role, and each operation allowed or why not."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_access")


@functions_framework.http
def psychologist_access(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
