"""GET /projects/{projectId}/hypotheses (contract): a bare array, newest first, paged."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.psychologist import service
from functions.psychologist.access import psychologist_endpoint
from shared.http import handle

ENDPOINT = psychologist_endpoint("psychologist_hypotheses_list", role="viewer")


@functions_framework.http
def psychologist_hypotheses_list(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.list_hypotheses)
