"""POST /internal/research/sweep: Cloud Scheduler's job that settles stuck jobs."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.research import service
from shared.http import handle_scheduled


@functions_framework.http
def research_sweep(request: flask.Request) -> ResponseReturnValue:
    return handle_scheduled(request, service.sweep)
