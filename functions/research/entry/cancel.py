"""POST /research-api/assistant/cancel: stop a queued or processing run."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.research import service
from shared.http import handle

ENDPOINT = endpoint("research_cancel")


@functions_framework.http
def research_cancel(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.cancel)
