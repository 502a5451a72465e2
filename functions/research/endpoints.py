"""How each research entry point is called: its registry entry plus the role it needs."""

from __future__ import annotations

from functions.registry import BY_NAME
from shared.http import Endpoint


def endpoint(name: str, role: str) -> Endpoint:
    entry = BY_NAME[name]
    assert entry.method is not None
    return Endpoint(
        method=entry.method,
        capability="agent:research",
        role=role,
        tenant_kind="workspace",
        tenant_param="workspace_id",
        body_schema=entry.request_schema,
        route=entry.route,
    )
