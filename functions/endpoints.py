"""An entry point's boundary settings, read from its registry entry plus who may call it."""

from __future__ import annotations

from functions.registry import BY_NAME
from shared.auth import USER_CLASSES, CredentialClass
from shared.http import Endpoint


def endpoint(
    name: str,
    *,
    capability: str,
    role: str,
    tenant_kind: str,
    tenant_param: str,
    method: str | None = None,
    classes: frozenset[CredentialClass] = USER_CLASSES,
) -> Endpoint:
    entry = BY_NAME[name]
    operation = entry.operation(method) if method else entry.operations[0]
    return Endpoint(
        method=operation.method,
        capability=capability,
        role=role,
        tenant_kind=tenant_kind,
        tenant_param=tenant_param,
        body_schema=operation.request_schema,
        params_schema=operation.params_schema,
        route=entry.route,
        classes=classes,
    )
