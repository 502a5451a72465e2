"""What a person can see, read with their token: the tenants they belong to now and their
agents, by name, with their role and the latest activity of each (`GET /v1/home`).

Reads, however many tenants: one collection-group query for the memberships, one batched
read for the tenants' names, and per project three aggregation counts, per org one query
for its agents, several tenants at once. A token limited to tenants sees only those; a
token sees only the kinds its capabilities reach; the role is the membership's now, so it
never exceeds the owner's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypedDict

from google.cloud.firestore_v1 import FieldFilter

from functions.loop import store as outcomes
from shared import auth
from shared.clients import db
from shared.retention import iso, utcnow
from shared.store import collection, counted, read_all, read_fields

LISTED = 50
"""Tenants listed in one read, and agents listed per org."""

CAPABILITY_OF_KIND = {
    "workspace": "agent:research",
    "project": "agent:psychologist",
    "org": "agent:connect",
}
"""What a token needs to reach each kind of tenant (registry.json's `access`)."""

KIND_OF_COLLECTION = {name: kind for kind, name in auth.TENANT_COLLECTIONS.items()}


class ProjectActivity(TypedDict):
    sessionsEnded: int
    hypothesesProposed: int
    trialsRunning: int


class AgentView(TypedDict):
    id: str
    name: str | None
    projectId: str | None
    sessionsStarted: int
    trialsRunning: int


class TenantView(TypedDict):
    id: str
    kind: str
    name: str | None
    role: str
    activity: ProjectActivity | None
    agents: list[AgentView] | None


class Home(TypedDict):
    userId: str
    since: str
    tenants: list[TenantView]
    truncated: bool


def start_of_day(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def memberships(principal: auth.Principal) -> tuple[list[tuple[str, str, str]], bool]:
    """(kind, tenant id, role) of each tenant the token may reach, and whether more
    memberships exist than one read lists."""
    query = (
        db()
        .collection_group("members")
        .where(filter=FieldFilter("user_id", "==", principal.user_id))
        .order_by("updated_at")
        .limit(LISTED + 1)
    )
    found = list(query.stream())
    reachable = []
    for snapshot in found[:LISTED]:
        tenant = snapshot.reference.parent.parent
        kind = KIND_OF_COLLECTION.get(tenant.parent.id) if tenant is not None else None
        role = (read_fields(snapshot) or {}).get("role")
        if kind is None or tenant is None or not auth.role_allows(role, "viewer"):
            continue
        if CAPABILITY_OF_KIND[kind] not in principal.capabilities:
            continue
        if principal.tenants is not None and tenant.id not in principal.tenants:
            continue
        reachable.append((kind, tenant.id, str(role)))
    return reachable, len(found) > LISTED


def project_activity(project_id: str, since: datetime) -> ProjectActivity:
    project = ("projects", project_id)
    ended = collection(*project, "sessions").where(filter=FieldFilter("ended_at", ">=", since))
    proposed = collection(*project, "hypotheses").where(
        filter=FieldFilter("createdAt", ">=", since)
    )
    running = outcomes.trials(project_id).where(filter=FieldFilter("status", "==", "running"))
    return {
        "sessionsEnded": counted(ended),
        "hypothesesProposed": counted(proposed),
        "trialsRunning": counted(running),
    }


def org_agents(org_id: str) -> tuple[list[AgentView], bool]:
    query = (
        collection("orgs", org_id, "agents")
        .select(["outcome_source", "running_trials", "last_seq"])
        .limit(LISTED + 1)
    )
    found = list(query.stream())
    agents: list[AgentView] = []
    for snapshot in found[:LISTED]:
        agent: dict[str, Any] = read_fields(snapshot) or {}
        source = agent.get("outcome_source") or {}
        agents.append(
            {
                "id": snapshot.id,
                "name": source.get("agent"),
                "projectId": source.get("project_id"),
                "sessionsStarted": int(agent.get("last_seq") or 0),
                "trialsRunning": len(agent.get("running_trials") or {}),
            }
        )
    agents.sort(key=lambda a: ((a["name"] or "\uffff").casefold(), a["id"]))
    return agents, len(found) > LISTED


ACTIVITY_READS_AT_ONCE = 16
"""Tenants whose activity is read at once: each is a few round trips, none waits on another."""


def _activity(
    kind: str, tenant_id: str, start: datetime
) -> tuple[ProjectActivity | None, list[AgentView] | None, bool]:
    """A project's counts, or an org's agents and whether more exist than are listed."""
    if kind == "project":
        return project_activity(tenant_id, start), None, False
    if kind == "org":
        agents, more = org_agents(tenant_id)
        return None, agents, more
    return None, None, False


def read_home(principal: auth.Principal, since: datetime | None) -> Home:
    start = since or start_of_day(utcnow())
    reachable, truncated = memberships(principal)
    refs = [auth.tenant_ref(db(), kind, tenant_id) for kind, tenant_id, _ in reachable]
    tenants = read_all(refs)
    present = [
        (kind, tenant_id, role, stored)
        for (kind, tenant_id, role), ref in zip(reachable, refs, strict=True)
        if (stored := read_fields(tenants[ref.path])) is not None
    ]
    with ThreadPoolExecutor(max_workers=ACTIVITY_READS_AT_ONCE) as pool:
        activities = list(pool.map(lambda tenant: _activity(tenant[0], tenant[1], start), present))
    listed: list[TenantView] = []
    for (kind, tenant_id, role, stored), (activity, agents, more) in zip(
        present, activities, strict=True
    ):
        truncated = truncated or more
        listed.append(
            {
                "id": tenant_id,
                "kind": kind,
                "name": stored.get("name"),
                "role": role,
                "activity": activity,
                "agents": agents,
            }
        )
    order = {"project": 0, "org": 1, "workspace": 2}
    listed.sort(key=lambda t: (order[t["kind"]], (t["name"] or "\uffff").casefold(), t["id"]))
    return {
        "userId": principal.user_id,
        "since": iso(start),
        "tenants": listed,
        "truncated": truncated,
    }
