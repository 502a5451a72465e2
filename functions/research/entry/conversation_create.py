"""POST /research-api/conversations/create: start a conversation in a workspace."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.research import service
from shared.http import handle

ENDPOINT = endpoint("research_conversation_create")


@functions_framework.http
def research_conversation_create(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.create_conversation)
