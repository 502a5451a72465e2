"""POST /research-api/assistant/ask: queue a run; the run worker takes it from its create event."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.research import service
from functions.research.access import research_endpoint
from shared.http import handle

ENDPOINT = research_endpoint("research_ask", role="member")


@functions_framework.http
def research_ask(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.ask)
