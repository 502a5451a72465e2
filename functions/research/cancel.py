"""POST /research-api/assistant/cancel: stop a queued or processing run."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.research import service
from functions.research.access import research_endpoint
from shared.http import handle

ENDPOINT = research_endpoint("research_cancel", role="member")


@functions_framework.http
def research_cancel(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.cancel)
