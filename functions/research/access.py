"""Who may call each research entry point: capability `agent:research` in a workspace."""

from __future__ import annotations

from functions.endpoints import endpoint
from shared.http import Endpoint


def research_endpoint(name: str, role: str) -> Endpoint:
    return endpoint(
        name,
        capability="agent:research",
        role=role,
        tenant_kind="workspace",
        tenant_param="workspace_id",
    )
