"""GET /projects/{projectId}/analyses/{analysisId}: status, counts, usage, rejected hypotheses."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.psychologist import service
from functions.psychologist.access import psychologist_endpoint
from shared.http import handle

ENDPOINT = psychologist_endpoint("psychologist_analysis_get", role="viewer")


@functions_framework.http
def psychologist_analysis_get(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.get_analysis)
