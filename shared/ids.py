"""Identifier helpers: UUIDs for research resources, ULIDs for event-like resources."""

from __future__ import annotations

import uuid

from ulid import ULID


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_ulid() -> str:
    return str(ULID())
