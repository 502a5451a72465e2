"""An entry point's boundary settings, read from its registry entry: schemas, route and
who may call it."""

from __future__ import annotations

from functions.registry import rest_entry
from shared.auth import SESSION_AUDIENCE_CLASSES, USER_CLASSES
from shared.http import Endpoint


def endpoint(name: str, method: str | None = None) -> Endpoint:
    entry = rest_entry(name)
    operation = entry.operation(method) if method else entry.operations[0]
    access = entry.access
    return Endpoint(
        method=operation.method,
        capability=access.capability,
        role=operation.role,
        tenant_kind=access.tenant_kind,
        tenant_param=access.tenant_param,
        body_schema=operation.request_schema,
        params_schema=operation.params_schema,
        route=entry.route,
        classes=SESSION_AUDIENCE_CLASSES if operation.audience else USER_CLASSES,
    )
