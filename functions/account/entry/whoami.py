"""GET /v1/whoami: who the bearer token stands for (the console checks a token with it)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.account import service
from functions.endpoints import endpoint
from shared.http import handle

ENDPOINT = endpoint("account_whoami")


@functions_framework.http
def account_whoami(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, service.whoami)
