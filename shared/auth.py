"""Opaque bearer tokens, stored only as hashes, and tenant roles.

A token is `evd_<token_id>_<secret>`. Firestore keeps `tokens/<token_id>` with the
SHA-256 of the secret (256 random bits, so a fast hash is enough), the owner, the
credential class, the capabilities, the optional list of selected tenants, an optional
expiry and a revocation time. Membership lives at `<tenants>/<tenant_id>/members/<user>`.
A request's rights are the intersection of what the token carries and what its owner
holds right now, read on every request.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NotRequired, TypedDict

from cachetools import TTLCache
from google.cloud import firestore

from shared.errors import ApiError, ErrorCode
from shared.ids import new_random_id
from shared.instance import Instance, instance
from shared.retention import utcnow
from shared.store import data_as, read_as


class CredentialClass(StrEnum):
    USER_SESSION = "user_session"
    DELEGATED_OAUTH = "delegated_oauth"
    PERSONAL_ACCESS_TOKEN = "personal_access_token"  # noqa: S105 - a class name, not a secret
    SESSION_AUDIENCE = "session_audience"


TokenDocument = TypedDict(
    "TokenDocument",
    {
        "hash": str,
        "user_id": str,
        "class": str,
        "capabilities": list[str],
        "tenants": list[str] | None,
        "created_at": datetime,
        "token_expires_at": datetime | None,
        "revoked_at": datetime | None,
        "audience": dict[str, str] | None,
        "expires_at": NotRequired[datetime],
    },
)
"""`tokens/{token_id}`: what a token carries; the secret only as its hash."""


class Membership(TypedDict):
    """`<tenants>/<tenant_id>/members/<user_id>`: the user's role in the tenant."""

    role: str
    user_id: NotRequired[str]
    """The member, so that a user's tenants are one collection-group query (`GET /v1/home`)."""
    updated_at: datetime


USER_CLASSES = frozenset(
    {
        CredentialClass.USER_SESSION,
        CredentialClass.DELEGATED_OAUTH,
        CredentialClass.PERSONAL_ACCESS_TOKEN,
    }
)
SESSION_AUDIENCE_CLASSES = USER_CLASSES | {CredentialClass.SESSION_AUDIENCE}
"""Who may read what one AgentConnect session produced: users, and that session's token."""

CAPABILITIES = ("agent:research", "agent:psychologist", "agent:connect")
ROLES = ("viewer", "member", "admin", "owner")
ROLE_RANK = {role: rank for rank, role in enumerate(ROLES)}
TENANT_COLLECTIONS = {"workspace": "workspaces", "project": "projects", "org": "orgs"}

_TOKEN_PATTERN = re.compile(
    r"^evd_([0-9A-Z]{26})_([A-Za-z0-9_-]{43})(?:\.([A-Za-z0-9_-]{1,400}))?$"
)
"""`evd_<token id>_<secret>.<user id, base64url>`: the user id lets the token and the
caller's membership be read in one batched read. Tokens made before it carried no user
part and still work (two reads when cold)."""


@dataclass(frozen=True)
class Principal:
    user_id: str
    token_id: str
    credential_class: CredentialClass
    capabilities: frozenset[str]
    tenants: frozenset[str] | None
    audience: dict[str, str] | None = None
    known_roles: dict[tuple[str, str], str | None] = field(default_factory=dict, compare=False)
    """Roles read together with the token, by (tenant kind, tenant id)."""


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def tenant_ref(client: firestore.Client, kind: str, tenant_id: str) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = client.collection(TENANT_COLLECTIONS[kind]).document(
        tenant_id
    )
    return ref


def member_ref(
    client: firestore.Client, kind: str, tenant_id: str, user_id: str
) -> firestore.DocumentReference:
    ref: firestore.DocumentReference = (
        tenant_ref(client, kind, tenant_id).collection("members").document(user_id)
    )
    return ref


def token_document(
    *,
    user_id: str,
    credential_class: CredentialClass,
    capabilities: list[str],
    tenants: list[str] | None,
    expires_in: timedelta | None,
    audience: dict[str, str] | None = None,
) -> tuple[str, str, TokenDocument]:
    """A new token: (token shown once, token id, the document to store)."""
    token_id = new_random_id()
    secret = secrets.token_urlsafe(32)
    now = utcnow()
    document: TokenDocument = {
        "hash": _hash(secret),
        "user_id": user_id,
        "class": credential_class.value,
        "capabilities": sorted(set(capabilities)),
        "tenants": sorted(set(tenants)) if tenants else None,
        "created_at": now,
        "token_expires_at": now + expires_in if expires_in else None,
        "revoked_at": None,
        "audience": audience,
    }
    if expires_in:
        # Firestore's TTL deletes an expired token: the document is only its hash and grant.
        document["expires_at"] = now + expires_in
    user_part = base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")
    return f"evd_{token_id}_{secret}.{user_part}", token_id, document


def create_token(client: firestore.Client, **kwargs: Any) -> tuple[str, str]:
    token, token_id, document = token_document(**kwargs)
    client.collection("tokens").document(token_id).create(dict(document))
    return token, token_id


def revoke_token(client: firestore.Client, token_id: str) -> bool:
    ref = client.collection("tokens").document(token_id)
    if not ref.get().exists:
        return False
    ref.update({"revoked_at": utcnow()})
    return True


def bearer_token(authorization: str | None) -> str:
    """The token from an `Authorization: Bearer` header; 401 when absent or malformed."""
    if not authorization:
        raise ApiError(
            ErrorCode.UNAUTHENTICATED,
            "An Authorization: Bearer token is required.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    # An OTLP exporter that does not URL-decode its headers variable (the JavaScript
    # SDK's, which Claude Code and Gemini CLI use) sends the space as written: `%20`.
    if authorization[:9].lower() == "bearer%20":
        authorization = "Bearer " + authorization[9:]
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            ErrorCode.UNAUTHENTICATED,
            "The Authorization header must be 'Bearer <token>'.",
            headers={"WWW-Authenticate": 'Bearer error="invalid_request"'},
        )
    return token.strip()


def _invalid_token() -> ApiError:
    return ApiError(
        ErrorCode.UNAUTHENTICATED,
        "The token is invalid, expired or revoked.",
        headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
    )


def principal_from_document(token_id: str, data: TokenDocument) -> Principal:
    tenants = data.get("tenants")
    return Principal(
        user_id=data["user_id"],
        token_id=token_id,
        credential_class=CredentialClass(data["class"]),
        capabilities=frozenset(data.get("capabilities") or ()),
        tenants=frozenset(tenants) if tenants else None,
        audience=data.get("audience"),
    )


def token_is_live(data: TokenDocument, now: datetime | None = None) -> bool:
    if data.get("revoked_at") is not None:
        return False
    deadline = data.get("token_expires_at")
    return deadline is None or deadline > (now or utcnow())


@dataclass
class _Remembered:
    lock: threading.Lock
    entries: TTLCache[Any, Any] | None
    """None when `AUTH_CACHE_SECONDS` turns remembering off."""


class AuthCache:
    """What a warm instance remembers of tokens, memberships and grants, for
    `AUTH_CACHE_SECONDS`: a revoked token, an expired one or a removed member is refused
    at the latest that long after the change (a token's own expiry is checked on every
    use). At most `MAX_ENTRIES`, the least recently used dropped first; safe across the
    threads of one instance. The entries are the instance's (`shared.instance`): a new
    instance remembers nothing."""

    MAX_ENTRIES = 10_000

    def _remembered(self) -> _Remembered:
        return instance().get(self._build)

    def _build(self, owner: Instance) -> _Remembered:
        lifetime = owner.settings.auth_cache_seconds
        entries: TTLCache[Any, Any] | None = (
            TTLCache(maxsize=self.MAX_ENTRIES, ttl=lifetime) if lifetime > 0 else None
        )
        return _Remembered(threading.Lock(), entries)

    def get(self, key: Any) -> tuple[bool, Any]:
        remembered = self._remembered()
        with remembered.lock:
            if remembered.entries is None or key not in remembered.entries:
                return False, None
            return True, remembered.entries[key]

    def put(self, key: Any, value: Any) -> None:
        remembered = self._remembered()
        with remembered.lock:
            if remembered.entries is not None:
                remembered.entries[key] = value


_tokens = AuthCache()
_memberships = AuthCache()


def _claimed_user(encoded: str | None) -> str | None:
    if encoded is None:
        return None
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def authenticate(
    client: firestore.Client, token: str, tenant: tuple[str, str] | None = None
) -> Principal:
    """The principal a bearer token stands for, or 401.

    When the token names its user and the request its tenant, the token and the caller's
    membership there are read in one batched read (and remembered for AUTH_CACHE_SECONDS);
    `check_membership` then needs no read of its own."""
    match = _TOKEN_PATTERN.match(token)
    if match is None:
        raise _invalid_token()
    token_id, secret, encoded_user = match.groups()
    user = _claimed_user(encoded_user)
    key = _hash(f"{token_id}:{secret}:{encoded_user}")
    cached, data = _tokens.get(key)
    roles: dict[tuple[str, str], str | None] = {}
    if not cached:
        token_ref = client.collection("tokens").document(token_id)
        refs = [token_ref]
        if user is not None and tenant is not None:
            refs.append(member_ref(client, tenant[0], tenant[1], user))
        snapshots = {s.reference.path: s for s in client.get_all(refs)}
        data = _checked_token(snapshots[token_ref.path], secret, encoded_user, user)
        _tokens.put(key, data)
        if data is not None and len(refs) > 1 and tenant is not None:
            membership = data_as(snapshots[refs[1].path], Membership)
            role = membership.get("role") if membership is not None else None
            roles[tenant] = role
            _memberships.put((*tenant, data["user_id"]), role)
    if data is None or not token_is_live(data):
        raise _invalid_token()
    principal = principal_from_document(token_id, data)
    return replace(principal, known_roles=roles)


def _checked_token(
    snapshot: firestore.DocumentSnapshot[Any],
    secret: str,
    encoded_user: str | None,
    user: str | None,
) -> TokenDocument | None:
    """The token document when the secret matches and the user part (if any) names its
    user; None otherwise."""
    data = data_as(snapshot, TokenDocument)
    if data is None or not hmac.compare_digest(data["hash"], _hash(secret)):
        return None
    if encoded_user is not None and user != data["user_id"]:
        return None
    return data


def check_credential_class(principal: Principal, classes: frozenset[CredentialClass]) -> None:
    if principal.credential_class not in classes:
        raise ApiError(
            ErrorCode.FORBIDDEN,
            f"A {principal.credential_class.value} token cannot call this operation.",
        )


def check_token_grants(
    principal: Principal,
    *,
    capability: str,
    tenant_id: str,
    classes: frozenset[CredentialClass],
) -> None:
    """What the token alone allows: its class, capability and selected tenants. No reads."""
    check_credential_class(principal, classes)
    if capability not in principal.capabilities:
        raise ApiError(ErrorCode.FORBIDDEN, f"The token lacks the capability {capability}.")
    if principal.tenants is not None and tenant_id not in principal.tenants:
        raise ApiError(ErrorCode.FORBIDDEN, "The token is not selected for this tenant.")


def role_allows(role: str | None, needed: str) -> bool:
    return role is not None and ROLE_RANK.get(role, -1) >= ROLE_RANK[needed]


def known_role(principal: Principal, kind: str, tenant_id: str) -> tuple[bool, str | None]:
    """(known, role): the caller's role in a tenant as this request read it with the token,
    or as remembered for AUTH_CACHE_SECONDS; not known means it must be read."""
    if (kind, tenant_id) in principal.known_roles:
        return True, principal.known_roles[(kind, tenant_id)]
    return _memberships.get((kind, tenant_id, principal.user_id))


def check_membership(
    client: firestore.Client, principal: Principal, *, kind: str, tenant_id: str, role: str
) -> None:
    key = (kind, tenant_id, principal.user_id)
    cached, held = known_role(principal, kind, tenant_id)
    if not cached:
        membership = read_as(member_ref(client, kind, tenant_id, principal.user_id), Membership)
        held = membership.get("role") if membership is not None else None
        _memberships.put(key, held)
    if held is None:
        raise ApiError(ErrorCode.FORBIDDEN, f"The caller is not a member of this {kind}.")
    if not role_allows(held, role):
        raise ApiError(ErrorCode.FORBIDDEN, f"This operation needs the {role} role or higher.")
