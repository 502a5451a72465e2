"""POST /research-api/evidence/read: cited items at their cited revisions, for checking."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.research import service
from shared.http import handle

ENDPOINT = endpoint("research_evidence_read")


@functions_framework.http
def research_evidence_read(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.read_evidence)
