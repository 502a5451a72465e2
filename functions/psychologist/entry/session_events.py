"""/projects/{projectId}/sessions/{sessionId}/events: POST ingests a batch, GET reads for audit."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import service
from shared.http import Route, handle_methods

NAME = "psychologist_session_events"
ROUTES = {
    "POST": Route(endpoint(NAME, method="POST"), service.ingest_events),
    "GET": Route(endpoint(NAME, method="GET"), service.read_events),
}


@functions_framework.http
def psychologist_session_events(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
