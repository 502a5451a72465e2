"""/projects/{projectId}/sessions/{sessionId}/events: POST ingests a batch, GET reads for audit."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.psychologist import service
from functions.psychologist.access import psychologist_endpoint
from shared.http import Route, handle_methods

NAME = "psychologist_session_events"
ROUTES = {
    "POST": Route(psychologist_endpoint(NAME, role="member", method="POST"), service.ingest_events),
    "GET": Route(psychologist_endpoint(NAME, role="viewer", method="GET"), service.read_events),
}


@functions_framework.http
def psychologist_session_events(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
