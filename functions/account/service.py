"""What a token stands for, read with the token alone."""

from __future__ import annotations

from shared.http import Call, Reply


def whoami(call: Call) -> Reply:
    principal = call.principal
    tenants = sorted(principal.tenants) if principal.tenants is not None else None
    return Reply(
        {
            "userId": principal.user_id,
            "credentialClass": principal.credential_class.value,
            "capabilities": sorted(principal.capabilities),
            "tenants": tenants,
        }
    )
