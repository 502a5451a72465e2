"""POST /research-api/evidence/upsert: add items, or change their text (bumping revisions)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_evidence_upsert")


@functions_framework.http
def research_evidence_upsert(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
