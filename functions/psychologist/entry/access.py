"""GET /projects/{projectId}/access: the caller's role, and each operation allowed or why not."""

from __future__ import annotations

import flask
import functions_framework
from flask.typing import ResponseReturnValue

from functions.endpoints import endpoint
from functions.psychologist import permissions
from shared.http import handle

ENDPOINT = endpoint("psychologist_access")


@functions_framework.http
def psychologist_access(request: flask.Request) -> ResponseReturnValue:
    return handle(request, ENDPOINT, permissions.access)
