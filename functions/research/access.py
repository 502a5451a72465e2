"""Who may call each research entry point: capability `agent:research` in a workspace."""

from __future__ import annotations

from typing import Any

from functions.endpoints import endpoint
from shared.auth import Grant
from shared.http import Endpoint


def research_endpoint(name: str, role: str) -> Endpoint:
    return endpoint(
        name,
        capability="agent:research",
        role=role,
        tenant_kind="workspace",
        tenant_param="workspace_id",
    )


def asker_grant(run: dict[str, Any]) -> Grant:
    """What the run's asker had to hold to ask: checked again at completion and on every
    read of a completed result."""
    return Grant(
        token_id=run["asker"]["token_id"],
        user_id=run["asker"]["user_id"],
        capability="agent:research",
        kind="workspace",
        tenant_id=run["workspace_id"],
        role="member",
    )
