"""`evidencia admin`: tenants, members and tokens, written to Firestore directly."""

from __future__ import annotations

import argparse
import json
import os
import re
import uuid
from datetime import timedelta
from typing import Any

from google.api_core.exceptions import AlreadyExists
from google.cloud import firestore

from shared import auth
from shared.clients import db
from shared.ids import new_ulid
from shared.retention import utcnow
from shared.validation import issues_for

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


KIND_HELP = "the tenant's kind; found from the id when not given"


class AdminError(Exception):
    pass


def parse_duration(text: str) -> timedelta:
    match = _DURATION.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 30m, 12h or 7d")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def add_parser(subparsers: Any) -> None:
    admin = subparsers.add_parser("admin", help="manage tenants, members and tokens")
    admin.add_argument(
        "--port",
        type=int,
        help="the port of the running `evidencia serve` whose emulator to use, "
        "when several are running",
    )
    groups = admin.add_subparsers(dest="group", required=True)

    tenant = groups.add_parser("tenant").add_subparsers(dest="action", required=True)
    create = tenant.add_parser("create", help="create a workspace, project or org")
    create.add_argument("--kind", required=True, choices=sorted(auth.TENANT_COLLECTIONS))
    create.add_argument("--id", dest="tenant_id")
    create.add_argument("--name")
    create.add_argument("--json", action="store_true")

    member = groups.add_parser("member").add_subparsers(dest="action", required=True)
    add = member.add_parser("add", help="add a user to a tenant, or change their role")
    add.add_argument("--tenant", required=True)
    add.add_argument("--kind", choices=sorted(auth.TENANT_COLLECTIONS), help=KIND_HELP)
    add.add_argument("--user", required=True)
    add.add_argument("--role", required=True, choices=auth.ROLES)
    add.add_argument("--json", action="store_true")
    remove = member.add_parser("remove", help="remove a user from a tenant")
    remove.add_argument("--tenant", required=True)
    remove.add_argument("--kind", choices=sorted(auth.TENANT_COLLECTIONS), help=KIND_HELP)
    remove.add_argument("--user", required=True)

    token = groups.add_parser("token").add_subparsers(dest="action", required=True)
    issue = token.add_parser("create", help="create a token; it is printed once")
    issue.add_argument("--user", required=True)
    issue.add_argument(
        "--class",
        dest="credential_class",
        required=True,
        choices=sorted(c.value for c in auth.USER_CLASSES),
    )
    issue.add_argument("--capability", action="append", required=True, choices=auth.CAPABILITIES)
    issue.add_argument("--tenant", action="append", dest="tenants")
    issue.add_argument("--expires-in", type=parse_duration)
    issue.add_argument("--json", action="store_true")
    revoke = token.add_parser("revoke", help="revoke a token by its id")
    revoke.add_argument("token_id")


def _use_running_emulator(port: int | None) -> None:
    """Point at the emulator of the running local host: the one on `port`, or the only
    one running; with none running, FIRESTORE_EMULATOR_HOST (or real Firestore) stays."""
    from cli.host import running_hosts

    hosts = running_hosts()
    if port is not None:
        if port not in hosts:
            raise AdminError(f"No `evidencia serve` is running on port {port}.")
        os.environ["FIRESTORE_EMULATOR_HOST"] = hosts[port]
    elif len(hosts) == 1:
        os.environ["FIRESTORE_EMULATOR_HOST"] = next(iter(hosts.values()))
    elif len(hosts) > 1:
        ports = ", ".join(str(p) for p in sorted(hosts))
        raise AdminError(f"Local hosts are running on ports {ports}; say which with --port.")


TENANT_IDS = "tenant_ids"
"""tenant_ids/{id} reserves a tenant id for one kind, so that ids never collide across kinds."""


def _kinds_holding(client: firestore.Client, tenant_id: str) -> list[str]:
    refs = [auth.tenant_ref(client, kind, tenant_id) for kind in auth.TENANT_COLLECTIONS]
    found = {s.reference.path for s in client.get_all(refs) if s.exists}
    return [
        kind for kind, ref in zip(auth.TENANT_COLLECTIONS, refs, strict=True) if ref.path in found
    ]


def _find_tenant(client: firestore.Client, tenant_id: str, kind: str | None = None) -> str:
    """The kind of the tenant with this id (checked to be `kind` when one is given)."""
    held = _kinds_holding(client, tenant_id)
    if kind is not None:
        if kind not in held:
            raise AdminError(f"No {kind} has the id {tenant_id}.")
        return kind
    if not held:
        raise AdminError(f"No workspace, project or org has the id {tenant_id}.")
    if len(held) > 1:
        raise AdminError(
            f"The id {tenant_id} names a {' and a '.join(held)}; say which with --kind."
        )
    return held[0]


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    print(json.dumps(payload) if getattr(args, "json", False) else text)


TENANT_ID_IN_API = {
    "workspace": ("research/conversation_create.request", "workspace_id"),
    "project": ("psychologist/project.params", "projectId"),
    "org": ("agentconnect/agent.params", "orgId"),
}
"""Where the API publishes the id pattern of each kind: the CLI accepts no id it refuses."""


def _check_tenant_id(kind: str, tenant_id: str) -> None:
    schema_name, field = TENANT_ID_IN_API[kind]
    if any(issue["path"] == [field] for issue in issues_for(schema_name, {field: tenant_id})):
        readable = "a UUID" if kind == "workspace" else "1 to 128 of A-Z a-z 0-9 _ -"
        raise AdminError(
            f"A {kind} id must be {readable}, as the API's paths take; {tenant_id!r} is not."
        )


def tenant_create(args: argparse.Namespace) -> None:
    client = db()
    if args.kind == "workspace":
        tenant_id = args.tenant_id or str(uuid.uuid4())
    else:
        tenant_id = args.tenant_id or new_ulid()
    _check_tenant_id(args.kind, tenant_id)
    held = _kinds_holding(client, tenant_id)
    if held:
        raise AdminError(f"The id {tenant_id} is already taken by a {held[0]}.")
    reservation = client.collection(TENANT_IDS).document(tenant_id)
    batch = client.batch()
    batch.create(reservation, {"kind": args.kind})
    batch.create(
        auth.tenant_ref(client, args.kind, tenant_id),
        {"kind": args.kind, "name": args.name, "created_at": utcnow()},
    )
    try:
        batch.commit()
    except AlreadyExists:
        taken = (reservation.get().to_dict() or {}).get("kind", args.kind)
        raise AdminError(f"The id {tenant_id} is already taken by a {taken}.") from None
    _emit(args, {"id": tenant_id, "kind": args.kind}, f"created {args.kind} {tenant_id}")


def member_add(args: argparse.Namespace) -> None:
    client = db()
    kind = _find_tenant(client, args.tenant, args.kind)
    auth.member_ref(client, kind, args.tenant, args.user).set(
        {"role": args.role, "updated_at": utcnow()}
    )
    _emit(
        args,
        {"tenant": args.tenant, "kind": kind, "user": args.user, "role": args.role},
        f"{args.user} is {args.role} of {kind} {args.tenant}",
    )


def member_remove(args: argparse.Namespace) -> None:
    client = db()
    kind = _find_tenant(client, args.tenant, args.kind)
    ref = auth.member_ref(client, kind, args.tenant, args.user)
    if not ref.get().exists:
        raise AdminError(f"{args.user} is not a member of {args.tenant}.")
    ref.delete()
    print(f"{args.user} removed from {kind} {args.tenant}")


def token_create(args: argparse.Namespace) -> None:
    client = db()
    for tenant_id in args.tenants or []:
        _find_tenant(client, tenant_id)
    token, token_id = auth.create_token(
        client,
        user_id=args.user,
        credential_class=auth.CredentialClass(args.credential_class),
        capabilities=args.capability,
        tenants=args.tenants,
        expires_in=args.expires_in,
    )
    _emit(
        args,
        {"token": token, "token_id": token_id},
        f"token_id: {token_id}\ntoken (shown once, store it now): {token}",
    )


def token_revoke(args: argparse.Namespace) -> None:
    if not auth.revoke_token(db(), args.token_id):
        raise AdminError(f"No token has the id {args.token_id}.")
    print(f"token {args.token_id} revoked")


COMMANDS = {
    ("tenant", "create"): tenant_create,
    ("member", "add"): member_add,
    ("member", "remove"): member_remove,
    ("token", "create"): token_create,
    ("token", "revoke"): token_revoke,
}


def run(args: argparse.Namespace) -> None:
    _use_running_emulator(args.port)
    COMMANDS[(args.group, args.action)](args)
