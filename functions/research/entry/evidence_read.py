"""POST /research-api/evidence/read: cited items at their cited revisions, for checking."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_evidence_read")


@functions_framework.http
def research_evidence_read(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
