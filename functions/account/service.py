"""What a token stands for, and what its user can see, read with the token alone."""

from __future__ import annotations

from functions.account.home import read_home
from functions.account.requests import HomeParams
from shared.http import Call, Reply
from shared.retention import parse_instant


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


def home(call: Call) -> Reply:
    params = call.params_as(HomeParams)
    since = params.get("since")
    return Reply(read_home(call.principal, parse_instant(since) if since else None))
