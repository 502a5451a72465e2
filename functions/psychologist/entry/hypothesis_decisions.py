"""GET /projects/{projectId}/hypotheses/{hypothesisId}/decisions: the decision history."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import service
from shared.http import handle

ENDPOINT = endpoint("psychologist_hypothesis_decisions")


@functions_framework.http
def psychologist_hypothesis_decisions(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.decision_history)
