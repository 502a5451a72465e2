"""Reading one evaluation also admits the session's own `session_audience` token (the
registry marks that operation): the token sees only its own session, and any other agent
or session is 404 to it."""

from __future__ import annotations

from functions.agentconnect.requests import EvaluationParams
from shared import auth
from shared.errors import not_found
from shared.http import Endpoint, default_authorizer, validated_as
from shared.jsonbody import JsonObject


def audience_authorizer(
    principal: auth.Principal, endpoint: Endpoint, tenant_id: str, params: JsonObject
) -> None:
    """A session token outside its own org and agent learns nothing: 404, not 403."""
    audience = principal.audience
    if principal.credential_class == auth.CredentialClass.SESSION_AUDIENCE and (
        audience is None
        or audience.get("org_id") != tenant_id
        or audience.get("agent_id") != validated_as(params, EvaluationParams)["id"]
    ):
        raise not_found("The evaluation")
    default_authorizer(principal, endpoint, tenant_id)
