"""POST /internal/agentconnect/sweep: Cloud Scheduler's job that settles stuck jobs."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.agentconnect import service
from shared.http import handle_scheduled


@functions_framework.http
def agentconnect_sweep(request: flask.Request) -> ResponseReturnValue:
    return handle_scheduled(request, service.sweep)
