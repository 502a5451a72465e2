"""Identifier helpers: UUIDs for research resources, ULIDs for event-like resources."""

from __future__ import annotations

import secrets
import uuid

from ulid import ULID


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_ulid() -> str:
    return str(ULID())


def new_random_id() -> str:
    """26 characters of Crockford base32 like a ULID, all random: document keys that do
    not grow with time, so that frequent creations spread over Firestore's key range
    instead of writing to its end."""
    return str(ULID.from_bytes(secrets.token_bytes(16)))
