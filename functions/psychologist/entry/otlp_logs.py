"""POST /projects/{projectId}/otlp/v1/logs: an OpenTelemetry log export, as session events."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("psychologist_otlp_logs")


@functions_framework.http
def psychologist_otlp_logs(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
