"""POST /projects/{projectId}/analyses: queue an analysis; its creation starts the worker."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import service
from shared.http import handle

ENDPOINT = endpoint("psychologist_analysis_create")


@functions_framework.http
def psychologist_analysis_create(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.create_analysis)
