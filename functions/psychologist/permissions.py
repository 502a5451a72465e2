"""What a caller may do in a project, answered by the same checks the boundary makes, so
that a client shows an action only to those it would admit (and tells the others why).

No reads of its own: the caller's membership was read with the token."""

from __future__ import annotations

from typing_extensions import TypedDict

from functions.endpoints import endpoint
from functions.psychologist.requests import ProjectParams
from functions.registry import Operation, public_operations
from shared.auth import Principal, known_role
from shared.errors import ApiError
from shared.http import Call, Reply, default_authorizer

API = "psychologist"


class Permission(TypedDict):
    method: str
    path: str
    summary: str
    allowed: bool
    reason: str | None


def _permission(
    principal: Principal, project_id: str, name: str, operation: Operation
) -> Permission:
    target = endpoint(name, operation.method)
    reason = None
    try:
        default_authorizer(principal, target, project_id)
    except ApiError as refused:
        reason = refused.message
    return {
        "method": operation.method,
        "path": target.route,
        "summary": operation.summary,
        "allowed": reason is None,
        "reason": reason,
    }


def access(call: Call) -> Reply:
    project_id = call.params_as(ProjectParams)["projectId"]
    _, role = known_role(call.principal, "project", project_id)
    operations = [
        _permission(call.principal, project_id, entry.name, operation)
        for entry, operation in public_operations()
        if entry.tag == API
    ]
    return Reply(
        {
            "projectId": project_id,
            "userId": call.principal.user_id,
            "credentialClass": call.principal.credential_class.value,
            "role": role,
            "operations": operations,
        }
    )
