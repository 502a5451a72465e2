"""POST /research-api/evidence/remove: delete items and bump the conversation revision."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_evidence_remove")


@functions_framework.http
def research_evidence_remove(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
