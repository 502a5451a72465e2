"""GET /projects/{projectId}/analyses/{analysisId}: status, counts, usage, rejected hypotheses."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import service
from shared.http import handle

ENDPOINT = endpoint("psychologist_analysis_get")


@functions_framework.http
def psychologist_analysis_get(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.get_analysis)
