"""GET /v1/home: the tenants and agents a token's user can see, by name, with their role
and latest activity (the console's home page)."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import routes
from shared.http import handle_methods

ROUTES = routes("account_home")


@functions_framework.http
def account_home(request: flask.Request) -> ResponseReturnValue:
    return handle_methods(request, ROUTES)
