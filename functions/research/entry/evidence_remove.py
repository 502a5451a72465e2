"""POST /research-api/evidence/remove: delete items and bump the conversation revision."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.research import service
from shared.http import handle

ENDPOINT = endpoint("research_evidence_remove")


@functions_framework.http
def research_evidence_remove(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.remove_evidence)
