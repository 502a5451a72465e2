"""GET /v1/whoami: who the bearer token stands for (the console checks a token with it)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("account_whoami")


@functions_framework.http
def account_whoami(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
