"""Research authority beyond the boundary: what a run's asker must still hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.cloud import firestore

from functions.research.documents import Run
from shared.auth import (
    AuthCache,
    Membership,
    Principal,
    TokenDocument,
    known_role,
    member_ref,
    principal_from_document,
    role_allows,
    token_is_live,
)
from shared.store import data_as, read_all


@dataclass(frozen=True)
class Grant:
    """The rights an ask was checked for, checked again at completion and on each read."""

    token_id: str
    user_id: str
    capability: str
    kind: str
    tenant_id: str
    role: str

    def refs(self, client: firestore.Client) -> list[firestore.DocumentReference]:
        """The documents `holds` needs: read them with the caller's other reads."""
        return [
            client.collection("tokens").document(self.token_id),
            member_ref(client, self.kind, self.tenant_id, self.user_id),
        ]

    def holds(
        self, snapshots: dict[str, firestore.DocumentSnapshot[Any]], client: firestore.Client
    ) -> bool:
        token_ref, membership_ref = self.refs(client)
        token, member = snapshots.get(token_ref.path), snapshots.get(membership_ref.path)
        data = data_as(token, TokenDocument) if token is not None else None
        membership = data_as(member, Membership) if member is not None else None
        if data is None or membership is None:
            return False
        if not token_is_live(data):
            return False
        principal = principal_from_document(self.token_id, data)
        if self.capability not in principal.capabilities:
            return False
        if principal.tenants is not None and self.tenant_id not in principal.tenants:
            return False
        return role_allows(membership.get("role"), self.role)


_GRANTS = AuthCache()


def _held_by_caller(grant: Grant, caller: Principal) -> bool | None:
    """Whether the grant holds, told by the caller's own authentication when the caller
    is the asker (same token, its role already read): None when the caller cannot tell."""
    if caller.token_id != grant.token_id:
        return None
    known, role = known_role(caller, grant.kind, grant.tenant_id)
    if not known:
        return None
    return (
        grant.capability in caller.capabilities
        and (caller.tenants is None or grant.tenant_id in caller.tenants)
        and role_allows(role, grant.role)
    )


def still_granted(client: firestore.Client, grant: Grant, caller: Principal | None = None) -> bool:
    """Whether `grant` still holds: from the caller's own authentication when the caller
    is the asker, else read and remembered for `AUTH_CACHE_SECONDS` like the rest of
    auth, so that a warm instance answers without a read."""
    told = _held_by_caller(grant, caller) if caller is not None else None
    if told is not None:
        return told
    cached, held = _GRANTS.get(grant)
    if cached:
        return bool(held)
    snapshots = read_all(grant.refs(client))
    held = grant.holds(snapshots, client)
    _GRANTS.put(grant, held)
    return bool(held)


def asker_grant(run: Run) -> Grant:
    """What the run's asker had to hold to ask: checked again at completion and on every
    read of a completed result."""
    return Grant(
        token_id=run["asker"]["token_id"],
        user_id=run["asker"]["user_id"],
        capability="agent:research",
        kind="workspace",
        tenant_id=run["workspace_id"],
        role="member",
    )
