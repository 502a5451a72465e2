"""`GET /v1/home`: the tenants and agents a token's user can see, by name, with their role
and the latest activity of each; never more than the token carries or the user holds now."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from shared.clients import db
from shared.retention import iso, utcnow
from tests.api import Api, World
from tests.test_auth import assert_refused
from tests.test_mcp import call

HOME = "/v1/home"
EVERY = ("agent:research", "agent:psychologist", "agent:connect")
AGENT = "497f6eca-6276-4993-bfeb-53cbbbba6f08"


def named(world: World, kind: str, name: str) -> str:
    tenant = world.tenant(kind)
    db().document(f"{kind}s/{tenant}").update({"name": name})
    return tenant


def home(api: Api, token: str, **query: str) -> dict[str, Any]:
    suffix = "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
    reply = api.call("GET", HOME + suffix, token=token)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def listed(body: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    return [(t["kind"], t["id"], t["name"], t["role"]) for t in body["tenants"]]


def test_home_lists_each_tenant_the_user_belongs_to_by_name_with_their_role(
    api: Api, world: World
) -> None:
    project = named(world, "project", "Checkout agents")
    org = named(world, "org", "Acme")
    workspace = named(world, "workspace", "Market research")
    world.member(project, "olga", "admin")
    world.member(org, "olga", "viewer")
    world.member(workspace, "olga", "member")
    elsewhere = named(world, "project", "Not hers")
    world.member(elsewhere, "ivo", "owner")
    token, _ = world.token("olga", capabilities=EVERY)
    body = home(api, token)
    assert body["userId"] == "olga"
    assert body["truncated"] is False
    assert listed(body) == [
        ("project", project, "Checkout agents", "admin"),
        ("org", org, "Acme", "viewer"),
        ("workspace", workspace, "Market research", "member"),
    ]


def test_home_counts_a_projects_sessions_ended_hypotheses_proposed_and_trials_running_since_a_time(
    api: Api, world: World
) -> None:
    project = named(world, "project", "Checkout agents")
    token = world.user(project, "olga", "viewer", capabilities=("agent:psychologist",))
    now = utcnow()
    earlier = now - timedelta(days=2)
    base = db().document(f"projects/{project}")
    for session, ended in (("s-1", now), ("s-2", now), ("s-3", earlier)):
        base.collection("sessions").document(session).set({"state": "closed", "ended_at": ended})
    base.collection("sessions").document("s-4").set({"state": "open"})
    for hypothesis, created in (("h-1", now), ("h-2", earlier)):
        base.collection("hypotheses").document(hypothesis).set(
            {"status": "proposed", "createdAt": created}
        )
    for trial, status in (("t-1", "running"), ("t-2", "stopped")):
        base.collection("trials").document(trial).set({"status": status})
    since = now - timedelta(hours=1)
    body = home(api, token, since=iso(since))
    assert body["since"] == iso(since)
    [tenant] = body["tenants"]
    assert tenant["activity"] == {"sessionsEnded": 2, "hypothesesProposed": 1, "trialsRunning": 1}
    assert tenant["agents"] is None
    wider = home(api, token, since=iso(now - timedelta(days=3)))["tenants"][0]["activity"]
    assert wider == {"sessionsEnded": 3, "hypothesesProposed": 2, "trialsRunning": 1}


def test_home_names_each_org_agent_by_its_linked_agent_name(api: Api, world: World) -> None:
    org = named(world, "org", "Acme")
    token = world.user(org, "olga", "admin", capabilities=("agent:connect",))
    agents = db().collection(f"orgs/{org}/agents")
    agents.document(AGENT).set(
        {
            "last_seq": 4,
            "outcome_source": {"project_id": "p-1", "agent": "dev-api"},
            "running_trials": {"t-1": {"hypothesis_id": "h-1"}},
        }
    )
    unlinked = "3f2b8a4e-1c9d-4e7f-8a6b-2d5c9e0f1a3b"
    agents.document(unlinked).set({"last_seq": 1})
    [tenant] = home(api, token)["tenants"]
    assert tenant["activity"] is None
    assert tenant["agents"] == [
        {
            "id": AGENT,
            "name": "dev-api",
            "projectId": "p-1",
            "sessionsStarted": 4,
            "trialsRunning": 1,
        },
        {"id": unlinked, "name": None, "projectId": None, "sessionsStarted": 1, "trialsRunning": 0},
    ]


def test_a_token_limited_to_tenants_sees_only_those(api: Api, world: World) -> None:
    chosen = named(world, "project", "Chosen")
    other = named(world, "project", "Other")
    for tenant in (chosen, other):
        world.member(tenant, "olga", "admin")
    token, _ = world.token("olga", capabilities=EVERY, tenants=(chosen,))
    assert [t["id"] for t in home(api, token)["tenants"]] == [chosen]


def test_a_token_sees_only_the_kinds_its_capabilities_reach(api: Api, world: World) -> None:
    project = named(world, "project", "Checkout agents")
    org = named(world, "org", "Acme")
    world.member(project, "olga", "admin")
    world.member(org, "olga", "admin")
    token, _ = world.token("olga", capabilities=("agent:connect",))
    assert [t["id"] for t in home(api, token)["tenants"]] == [org]


def test_a_removed_or_lowered_membership_shows_at_once(api: Api, world: World) -> None:
    """The role is the user's now, not when the token was made."""
    project = named(world, "project", "Checkout agents")
    org = named(world, "org", "Acme")
    world.member(project, "olga", "admin")
    world.member(org, "olga", "admin")
    token, _ = world.token("olga", capabilities=EVERY)
    world.member(project, "olga", "viewer")
    db().document(f"orgs/{org}/members/olga").delete()
    assert listed(home(api, token)) == [("project", project, "Checkout agents", "viewer")]


def test_an_outsider_sees_no_tenant(api: Api, world: World) -> None:
    project = named(world, "project", "Checkout agents")
    world.member(project, "olga", "owner")
    token, _ = world.token("ivo", capabilities=EVERY)
    body = home(api, token)
    assert body["tenants"] == []
    assert body["userId"] == "ivo"


def test_home_without_a_token_is_401(api: Api) -> None:
    assert_refused(api.call("GET", HOME), 401, "unauthenticated")


def test_the_home_tool_answers_what_the_http_read_answers(api: Api, world: World) -> None:
    project = named(world, "project", "Checkout agents")
    token = world.user(project, "olga", "member", capabilities=("agent:psychologist",))
    since = iso(utcnow() - timedelta(hours=1))
    over_http = home(api, token, since=since)
    result = call(api, token, "home", {"since": since})
    assert not result.isError, result.content
    assert result.structuredContent == over_http
