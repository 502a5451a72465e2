"""POST /internal/psychologist/sweep: Cloud Scheduler's job that ends silent sessions,
settles stuck analyses and resumes those whose Gemini batch has ended."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.psychologist import batch
from shared.http import handle_scheduled


@functions_framework.http
def psychologist_sweep(request: flask.Request) -> ResponseReturnValue:
    return handle_scheduled(request, batch.sweep)
