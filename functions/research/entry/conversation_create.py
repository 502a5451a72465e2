"""POST /research-api/conversations/create: start a conversation in a workspace."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("research_conversation_create")


@functions_framework.http
def research_conversation_create(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
