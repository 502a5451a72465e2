"""POST /research-api/evidence/upsert: add items, or change their text (bumping revisions)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.research import service
from shared.http import handle

ENDPOINT = endpoint("research_evidence_upsert")


@functions_framework.http
def research_evidence_upsert(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.upsert_evidence)
