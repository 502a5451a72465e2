"""Who may call each Psychologist entry point: capability `agent:psychologist` in a project."""

from __future__ import annotations

from functions.endpoints import endpoint
from shared.http import Endpoint


def psychologist_endpoint(name: str, role: str, method: str | None = None) -> Endpoint:
    return endpoint(
        name,
        capability="agent:psychologist",
        role=role,
        tenant_kind="project",
        tenant_param="projectId",
        method=method,
    )
