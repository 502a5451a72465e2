"""Tokens, capabilities, selected tenants and roles, checked against the real emulator."""

from __future__ import annotations

import base64

import pytest
import requests

from shared.clients import db
from tests.api import Api, Configure, World, admin, all_documents, document, wait_for

CREATE = "/research-api/conversations/create"


@pytest.fixture
def workspace(world: World) -> str:
    return world.tenant()


def create(api: Api, workspace: str, token: str | None, **headers: str) -> requests.Response:
    return api.post(CREATE, {"workspace_id": workspace}, token, headers=headers or None)


def assert_refused(reply: requests.Response, status: int, code: str) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["code"] == code
    assert body["request_id"] == reply.headers["x-request-id"]
    if status == 401:
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_member_token_with_the_capability_gets_through(
    api: Api, world: World, workspace: str
) -> None:
    token = world.user(workspace, "ana", "member")
    reply = create(api, workspace, token)
    assert reply.status_code == 201, reply.text
    assert reply.json()["workspace_id"] == workspace


def test_no_token_is_401_and_writes_nothing(api: Api, workspace: str) -> None:
    before = all_documents()
    assert_refused(create(api, workspace, None), 401, "unauthenticated")
    assert all_documents() == before


@pytest.mark.parametrize("header", ["Bearer", "Basic abc", "Bearer evd_nonsense"])
def test_a_malformed_or_unknown_token_is_401(api: Api, workspace: str, header: str) -> None:
    assert_refused(create(api, workspace, None, Authorization=header), 401, "unauthenticated")


def test_a_token_with_a_wrong_secret_is_401(api: Api, world: World, workspace: str) -> None:
    token = world.user(workspace, "ana", "member")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert_refused(create(api, workspace, forged), 401, "unauthenticated")


def test_a_token_past_its_expiry_is_401(api: Api, world: World, workspace: str) -> None:
    world.member(workspace, "ana", "member")
    token, token_id = world.token("ana")
    ref = db().collection("tokens").document(token_id)
    ref.update({"token_expires_at": ref.get().get("created_at")})
    assert_refused(create(api, workspace, token), 401, "unauthenticated")


def test_a_revoked_token_is_401(api: Api, world: World, workspace: str) -> None:
    world.member(workspace, "ana", "member")
    token, token_id = world.token("ana")
    assert create(api, workspace, token).status_code == 201
    from cli.main import main

    assert main(["admin", "token", "revoke", token_id]) == 0
    assert_refused(create(api, workspace, token), 401, "unauthenticated")


def test_a_token_without_the_capability_is_403_and_writes_nothing(
    api: Api, world: World, workspace: str
) -> None:
    token = world.user(workspace, "ana", "member", capabilities=("agent:psychologist",))
    before = all_documents()
    assert_refused(create(api, workspace, token), 403, "forbidden")
    assert all_documents() == before


def test_a_tenant_outside_the_tokens_selection_is_403(
    api: Api, world: World, workspace: str
) -> None:
    other = world.tenant()
    token = world.user(workspace, "ana", "member", tenants=(other,))
    world.member(other, "ana", "member")
    assert_refused(create(api, workspace, token), 403, "forbidden")
    assert create(api, other, token).status_code == 201


def test_a_role_too_low_is_403(api: Api, world: World, workspace: str) -> None:
    token = world.user(workspace, "vic", "viewer")
    assert_refused(create(api, workspace, token), 403, "forbidden")


def test_a_non_member_is_403(api: Api, world: World, workspace: str) -> None:
    other = world.tenant()
    token = world.user(other, "eve", "owner")
    assert_refused(create(api, workspace, token), 403, "forbidden")


def test_a_removed_member_loses_access_at_once(api: Api, world: World, workspace: str) -> None:
    token = world.user(workspace, "ana", "member")
    assert create(api, workspace, token).status_code == 201
    from cli.main import main

    assert main(["admin", "member", "remove", "--tenant", workspace, "--user", "ana"]) == 0
    assert_refused(create(api, workspace, token), 403, "forbidden")


def test_tokens_are_stored_only_as_hashes(world: World, workspace: str) -> None:
    token, token_id = world.token("ana")
    stored = document(f"tokens/{token_id}")
    assert token not in str(stored)
    secret, _, user_part = token.removeprefix(f"evd_{token_id}_").partition(".")
    assert base64.urlsafe_b64decode(user_part + "=" * (-len(user_part) % 4)) == b"ana"
    assert len(secret) == 43
    assert secret not in str(stored)
    assert len(stored["hash"]) == 64


def test_admin_refuses_a_workspace_id_that_is_not_a_uuid(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    assert main(["admin", "tenant", "create", "--kind", "workspace", "--id", "nope"]) == 1
    assert "must be a UUID" in capsys.readouterr().err
    assert admin("tenant", "create", "--kind", "project")["id"]


def test_a_warm_instance_remembers_auth_only_for_the_cache_lifetime(
    api: Api, world: World, workspace: str, configure: Configure
) -> None:
    configure(AUTH_CACHE_SECONDS="1")
    world.member(workspace, "ana", "member")
    token, token_id = world.token("ana")
    assert create(api, workspace, token).status_code == 201
    from cli.main import main

    assert main(["admin", "token", "revoke", token_id]) == 0
    assert create(api, workspace, token).status_code == 201, "within the lifetime"
    wait_for(lambda: create(api, workspace, token).status_code == 401, timeout=5)
    assert_refused(create(api, workspace, token), 401, "unauthenticated")


def test_a_token_whose_user_part_names_another_user_is_401(
    api: Api, world: World, workspace: str
) -> None:
    world.member(workspace, "ana", "member")
    world.member(workspace, "bob", "owner")
    token, _ = world.token("ana")
    forged = token.rsplit(".", 1)[0] + "." + base64.urlsafe_b64encode(b"bob").decode().rstrip("=")
    assert_refused(create(api, workspace, forged), 401, "unauthenticated")
    assert create(api, workspace, token).status_code == 201


def test_a_token_made_before_tokens_named_their_user_still_works(
    api: Api, world: World, workspace: str
) -> None:
    world.member(workspace, "ana", "member")
    token, _ = world.token("ana")
    assert create(api, workspace, token.rsplit(".", 1)[0]).status_code == 201


def test_tokens_have_random_keys_and_an_expiring_one_carries_its_ttl_field(
    emulator: object,
) -> None:
    """Token ids do not grow with time (a burst of session tokens would write to one end of
    the key range), and Firestore's TTL policy on `expires_at` deletes an expired token."""
    from datetime import timedelta

    from shared.auth import CredentialClass, create_token

    made = [
        create_token(
            db(),
            user_id="ana",
            credential_class=CredentialClass.PERSONAL_ACCESS_TOKEN,
            capabilities=["agent:research"],
            tenants=None,
            expires_in=timedelta(hours=1),
        )[1]
        for _ in range(12)
    ]
    assert made != sorted(made)
    stored = document(f"tokens/{made[0]}")
    assert stored["expires_at"] == stored["token_expires_at"]
    _, forever = create_token(
        db(),
        user_id="ana",
        credential_class=CredentialClass.PERSONAL_ACCESS_TOKEN,
        capabilities=["agent:research"],
        tenants=None,
        expires_in=None,
    )
    assert "expires_at" not in document(f"tokens/{forever}")
