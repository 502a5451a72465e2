"""Research authority beyond the boundary: what a run's asker must still hold."""

from __future__ import annotations

from typing import Any

from shared.auth import Grant


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
