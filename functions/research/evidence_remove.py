"""POST /research-api/evidence/remove: delete items and bump the conversation revision."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.research import service
from functions.research.access import research_endpoint
from shared.http import handle

ENDPOINT = research_endpoint("research_evidence_remove", role="member")


@functions_framework.http
def research_evidence_remove(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.remove_evidence)
