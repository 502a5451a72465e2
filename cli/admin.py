"""`evidencia admin`: tenants, members and tokens, written to Firestore directly."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict

from google.api_core.exceptions import AlreadyExists, GoogleAPICallError, RetryError
from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from shared import auth
from shared.clients import db
from shared.ids import new_ulid
from shared.instance import renew
from shared.retention import utcnow
from shared.store import read_fields, stream_as, writable
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


JSON_HELP = "print the result as one JSON object on stdout"
KIND_CHOICES = sorted(auth.TENANT_COLLECTIONS)


def _with_json(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
    command.add_argument("--json", action="store_true", help=JSON_HELP)
    return command


def add_parser(subparsers: Any) -> None:
    admin = subparsers.add_parser(
        "admin",
        help="manage tenants, members and tokens",
        description="Tenants, members and tokens, written straight to Firestore: the emulator "
        "named by FIRESTORE_EMULATOR_HOST, else that of the running `evidencia serve` of this "
        "checkout, or a real project "
        "only when --project names it. Every command says on stderr which Firestore it used, "
        "unless --json asks for output a script reads.",
    )
    admin.add_argument(
        "--port",
        type=int,
        help="the port of the running `evidencia serve` whose emulator to use, "
        "when several are running",
    )
    admin.add_argument(
        "--project",
        help="write to this real Firestore project (through application default "
        "credentials) when no emulator is in use; never implied",
    )
    groups = admin.add_subparsers(dest="group", required=True)

    tenant = groups.add_parser("tenant", help="workspaces, projects and orgs")
    tenants = tenant.add_subparsers(dest="action", required=True)
    create = _with_json(tenants.add_parser("create", help="create a workspace, project or org"))
    create.add_argument("--kind", required=True, choices=KIND_CHOICES, help="what to create")
    create.add_argument(
        "--id",
        dest="tenant_id",
        help="its id (default: a new UUID for a workspace, a new ULID otherwise)",
    )
    create.add_argument("--name", help="a name for people to read")
    listed = _with_json(tenants.add_parser("list", help="list tenants, oldest first"))
    listed.add_argument("--kind", choices=KIND_CHOICES, help="only this kind (default: all)")

    member = groups.add_parser("member", help="who holds which role in a tenant")
    members = member.add_subparsers(dest="action", required=True)
    add = _with_json(members.add_parser("add", help="add a user to a tenant, or change their role"))
    add.add_argument("--tenant", required=True, help="the tenant's id")
    add.add_argument("--kind", choices=KIND_CHOICES, help=KIND_HELP)
    add.add_argument("--user", required=True, help="the user's id")
    add.add_argument(
        "--role", required=True, choices=auth.ROLES, help="viewer < member < admin < owner"
    )
    remove = _with_json(members.add_parser("remove", help="remove a user from a tenant"))
    remove.add_argument("--tenant", required=True, help="the tenant's id")
    remove.add_argument("--kind", choices=KIND_CHOICES, help=KIND_HELP)
    remove.add_argument("--user", required=True, help="the user's id")
    roster = _with_json(members.add_parser("list", help="list a tenant's members and roles"))
    roster.add_argument("--tenant", required=True, help="the tenant's id")
    roster.add_argument("--kind", choices=KIND_CHOICES, help=KIND_HELP)

    token = groups.add_parser("token", help="bearer tokens")
    tokens = token.add_subparsers(dest="action", required=True)
    issue = _with_json(
        tokens.add_parser(
            "create",
            help="create a token; it is printed once and stored only as a hash",
            description="A token grants its capabilities in the tenants it names (every "
            "tenant its user is a member of when it names none), within the user's role in "
            "each. It needs --expires-in or an explicit --no-expiry.",
        )
    )
    issue.add_argument("--user", required=True, help="whose token it is")
    issue.add_argument(
        "--class",
        dest="credential_class",
        required=True,
        choices=sorted(c.value for c in auth.USER_CLASSES),
        help="what kind of credential it stands for",
    )
    issue.add_argument(
        "--capability",
        action="append",
        required=True,
        choices=auth.CAPABILITIES,
        help="an API it may call; repeat for several",
    )
    issue.add_argument(
        "--tenant",
        action="append",
        dest="tenants",
        help="a tenant it may act in (it must exist); repeat for several; without any, "
        "the token acts in every tenant its user is a member of",
    )
    lifetime = issue.add_mutually_exclusive_group(required=True)
    lifetime.add_argument(
        "--expires-in", type=parse_duration, help="how long it lasts: 30m, 12h, 7d"
    )
    lifetime.add_argument(
        "--no-expiry", action="store_true", help="it lasts until revoked (say so explicitly)"
    )
    revoke = _with_json(tokens.add_parser("revoke", help="revoke a token by its id"))
    revoke.add_argument("token_id", help="the token's id (the ULID after evd_)")
    owned = _with_json(
        tokens.add_parser("list", help="list a user's tokens, newest first, never their secrets")
    )
    owned.add_argument("--user", required=True, help="whose tokens")


def _target(port: int | None, project: str | None) -> str:
    """Point at the Firestore to use and say which: the emulator of the local host on
    `port`, else FIRESTORE_EMULATOR_HOST when it is set, else the emulator of the only
    local host started from this checkout, else the real project named by `project`;
    without any of them, refuse."""
    from cli.host import running_hosts

    hosts = running_hosts()
    if port is not None:
        if port not in hosts:
            raise AdminError(f"No `evidencia serve` of this checkout is running on port {port}.")
        os.environ["FIRESTORE_EMULATOR_HOST"] = hosts[port]
        return f"the emulator at {hosts[port]} (evidencia serve on port {port})"
    if os.environ.get("FIRESTORE_EMULATOR_HOST"):
        return f"the emulator at {os.environ['FIRESTORE_EMULATOR_HOST']} (FIRESTORE_EMULATOR_HOST)"
    if len(hosts) > 1:
        ports = ", ".join(str(p) for p in sorted(hosts))
        raise AdminError(f"Local hosts are running on ports {ports}; say which with --port.")
    if hosts:
        [(found, emulator)] = hosts.items()
        os.environ["FIRESTORE_EMULATOR_HOST"] = emulator
        return f"the emulator at {emulator} (evidencia serve on port {found})"
    if project:
        os.environ["GOOGLE_CLOUD_PROJECT"] = project
        return f"the real Firestore of project {project}"
    raise AdminError(
        "No local host of this checkout is running and FIRESTORE_EMULATOR_HOST is not set. "
        "Start one with `make run`, or name a real project with "
        "`evidencia admin --project PROJECT ...`."
    )


TENANT_IDS = "tenant_ids"
"""tenant_ids/{id} reserves a tenant id for one kind, so that ids never collide across kinds."""


class Tenant(TypedDict):
    """`workspaces/{id}`, `projects/{id}` or `orgs/{id}`: a tenant as created here."""

    kind: str
    name: str | None
    created_at: datetime


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
    tenant: Tenant = {"kind": args.kind, "name": args.name, "created_at": utcnow()}
    batch.create(auth.tenant_ref(client, args.kind, tenant_id), writable(tenant))
    try:
        batch.commit()
    except AlreadyExists:
        taken = (read_fields(reservation.get()) or {}).get("kind", args.kind)
        raise AdminError(f"The id {tenant_id} is already taken by a {taken}.") from None
    _emit(args, {"id": tenant_id, "kind": args.kind}, f"created {args.kind} {tenant_id}")


def member_add(args: argparse.Namespace) -> None:
    client = db()
    kind = _find_tenant(client, args.tenant, args.kind)
    membership: auth.Membership = {"role": args.role, "user_id": args.user, "updated_at": utcnow()}
    auth.member_ref(client, kind, args.tenant, args.user).set(writable(membership))
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
    _emit(
        args,
        {"tenant": args.tenant, "kind": kind, "user": args.user, "removed": True},
        f"{args.user} removed from {kind} {args.tenant}",
    )


def _covers(tenants: list[str] | None) -> str:
    if not tenants:
        return "every tenant its user is a member of (no --tenant given)"
    return "tenants " + ", ".join(tenants)


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
        expires_in=None if args.no_expiry else args.expires_in,
    )
    expiry = (
        "never expires (revoke it to end it)" if args.no_expiry else f"expires in {args.expires_in}"
    )
    _emit(
        args,
        {
            "token": token,
            "token_id": token_id,
            "tenants": args.tenants,
            "expires_in_s": None if args.no_expiry else int(args.expires_in.total_seconds()),
        },
        f"token_id: {token_id}\ncovers: {_covers(args.tenants)}; {expiry}\n"
        f"token (shown once, store it now): {token}",
    )


def token_revoke(args: argparse.Namespace) -> None:
    if not auth.revoke_token(db(), args.token_id):
        raise AdminError(f"No token has the id {args.token_id}.")
    _emit(args, {"token_id": args.token_id, "revoked": True}, f"token {args.token_id} revoked")


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


def tenant_list(args: argparse.Namespace) -> None:
    client = db()
    kinds = [args.kind] if args.kind else KIND_CHOICES
    found = [
        {"id": tenant_id, "kind": kind, "name": tenant.get("name")}
        for kind in kinds
        for tenant_id, tenant in stream_as(
            client.collection(auth.TENANT_COLLECTIONS[kind]), Tenant
        ).items()
    ]
    lines = [f"{t['kind']:9} {t['id']}  {t['name'] or ''}".rstrip() for t in found]
    _emit(args, {"tenants": found}, "\n".join(lines) or "no tenants")


def member_list(args: argparse.Namespace) -> None:
    client = db()
    kind = _find_tenant(client, args.tenant, args.kind)
    members = auth.tenant_ref(client, kind, args.tenant).collection("members")
    found = [
        {"user": user, "role": membership.get("role")}
        for user, membership in stream_as(members, auth.Membership).items()
    ]
    lines = [f"{m['user']}: {m['role']}" for m in found]
    _emit(
        args,
        {"tenant": args.tenant, "kind": kind, "members": found},
        "\n".join(lines) or f"{kind} {args.tenant} has no members",
    )


def token_list(args: argparse.Namespace) -> None:
    query = db().collection("tokens").where(filter=FieldFilter("user_id", "==", args.user))
    found: list[dict[str, Any]] = []
    for token_id, data in stream_as(query, auth.TokenDocument).items():
        found.append(
            {
                "token_id": token_id,
                "class": data.get("class"),
                "capabilities": data.get("capabilities"),
                "tenants": data.get("tenants"),
                "created_at": _iso(data.get("created_at")),
                "expires_at": _iso(data.get("token_expires_at")),
                "revoked_at": _iso(data.get("revoked_at")),
            }
        )
    found.sort(key=lambda t: str(t["token_id"]), reverse=True)
    lines = [
        f"{t['token_id']}  {','.join(t['capabilities'] or [])}  "
        f"{'revoked' if t['revoked_at'] else 'expires ' + (t['expires_at'] or 'never')}"
        for t in found
    ]
    _emit(
        args, {"user": args.user, "tokens": found}, "\n".join(lines) or f"{args.user} has no tokens"
    )


COMMANDS = {
    ("tenant", "create"): tenant_create,
    ("tenant", "list"): tenant_list,
    ("member", "add"): member_add,
    ("member", "remove"): member_remove,
    ("member", "list"): member_list,
    ("token", "create"): token_create,
    ("token", "revoke"): token_revoke,
    ("token", "list"): token_list,
}


def run(args: argparse.Namespace) -> None:
    before = {name: os.environ.get(name) for name in _TARGET_VARIABLES}
    where = _target(args.port, args.project)
    if any(os.environ.get(name) != value for name, value in before.items()):
        renew()
    if not getattr(args, "json", False):
        print(f"Firestore: {where}", file=sys.stderr)  # a script asking for JSON chose it
    try:
        COMMANDS[(args.group, args.action)](args)
    except (RetryError, GoogleAPICallError) as error:
        raise AdminError(f"Firestore ({where}) did not answer: {error}") from None


_TARGET_VARIABLES = ("FIRESTORE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT")
