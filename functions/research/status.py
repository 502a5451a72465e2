"""POST /research-api/assistant/status (contract): read a run; never regenerates, never writes."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.research import service
from functions.research.access import research_endpoint
from shared.http import handle

ENDPOINT = research_endpoint("research_status", role="viewer")


@functions_framework.http
def research_status(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.status)
