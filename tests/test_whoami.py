"""`GET /v1/whoami`: who a token stands for, read with the token alone, over HTTP and MCP."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared import auth
from shared.clients import db
from tests.api import Api, World
from tests.test_auth import assert_refused
from tests.test_mcp import call

WHOAMI = "/v1/whoami"


def test_a_persons_token_reads_who_it_stands_for(api: Api, world: World) -> None:
    token, _ = world.token("ana", capabilities=("agent:psychologist", "agent:research"))
    reply = api.call("GET", WHOAMI, token=token)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {
        "userId": "ana",
        "credentialClass": "personal_access_token",
        "capabilities": ["agent:psychologist", "agent:research"],
        "tenants": None,
    }


def test_a_token_limited_to_tenants_says_which(api: Api, world: World) -> None:
    first, second = world.tenant(), world.tenant()
    token, _ = world.token("bo", tenants=(second, first), credential_class="user_session")
    body = api.call("GET", WHOAMI, token=token).json()
    assert body["credentialClass"] == "user_session"
    assert body["tenants"] == sorted([first, second])


@pytest.mark.parametrize("header", [None, "Bearer evd_not-a-real-token"])
def test_no_token_or_a_bad_one_is_401(api: Api, header: str | None) -> None:
    headers = {"Authorization": header} if header else None
    assert_refused(api.call("GET", WHOAMI, headers=headers), 401, "unauthenticated")


def test_a_revoked_token_is_401(api: Api, world: World) -> None:
    token, token_id = world.token("cy")
    assert api.call("GET", WHOAMI, token=token).status_code == 200
    assert auth.revoke_token(db(), token_id)
    assert_refused(api.call("GET", WHOAMI, token=token), 401, "unauthenticated")


def test_a_session_token_is_not_a_person_and_is_403(api: Api, world: World) -> None:
    token, _ = auth.create_token(
        db(),
        user_id="agent-1",
        credential_class=auth.CredentialClass.SESSION_AUDIENCE,
        capabilities=["agent:connect"],
        tenants=None,
        expires_in=timedelta(hours=1),
        audience={"org_id": "org", "agent_id": "agent", "session_id": "session"},
    )
    assert_refused(api.call("GET", WHOAMI, token=token), 403, "forbidden")


def test_the_whoami_tool_answers_what_the_http_read_answers(api: Api, world: World) -> None:
    token, _ = world.token("di", capabilities=("agent:connect",))
    over_http = api.call("GET", WHOAMI, token=token).json()
    result = call(api, token, "whoami", {})
    assert not result.isError, result.content
    assert result.structuredContent == over_http
