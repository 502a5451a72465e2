"""Who may call each AgentConnect entry point: capability `agent:connect` in an org.

Reading one evaluation also admits the session's own `session_audience` token, which
sees only its own session: any other agent or session is 404 to it.
"""

from __future__ import annotations

from typing import Any

from functions.endpoints import endpoint
from shared import auth
from shared.errors import not_found
from shared.http import Endpoint, default_authorizer

AUDIENCE_CLASSES = auth.USER_CLASSES | {auth.CredentialClass.SESSION_AUDIENCE}


def connect_endpoint(name: str, role: str, audience: bool = False) -> Endpoint:
    return endpoint(
        name,
        capability="agent:connect",
        role=role,
        tenant_kind="org",
        tenant_param="orgId",
        classes=AUDIENCE_CLASSES if audience else auth.USER_CLASSES,
    )


def audience_authorizer(
    principal: auth.Principal, endpoint: Endpoint, tenant_id: str, params: dict[str, Any]
) -> None:
    """A session token outside its own org and agent learns nothing: 404, not 403."""
    audience = principal.audience
    if principal.credential_class == auth.CredentialClass.SESSION_AUDIENCE and (
        audience is None
        or audience.get("org_id") != tenant_id
        or audience.get("agent_id") != params.get("id")
    ):
        raise not_found("The evaluation")
    default_authorizer(principal, endpoint, tenant_id)
