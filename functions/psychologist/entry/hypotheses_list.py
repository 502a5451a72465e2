"""GET /projects/{projectId}/hypotheses (contract): a bare array, newest first, paged."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import service
from shared.http import handle

ENDPOINT = endpoint("psychologist_hypotheses_list")


@functions_framework.http
def psychologist_hypotheses_list(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.list_hypotheses)
