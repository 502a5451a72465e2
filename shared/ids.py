"""Identifier helpers: UUIDs for research resources, ULIDs for event-like resources."""

from __future__ import annotations

import re
import uuid

from ulid import ULID

UUID_PATTERN = re.compile(
    r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
    r"|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$"
)


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_ulid() -> str:
    return str(ULID())


def is_uuid(value: str) -> bool:
    return bool(UUID_PATTERN.match(value))
