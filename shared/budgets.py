"""Byte budgets that keep every stored document under Firestore's 1 MiB limit.

Sizes follow Firestore's storage-size formula
(https://firebase.google.com/docs/firestore/storage-size): a string is its UTF-8 bytes
plus 1; a number, timestamp or boolean 8 bytes (a boolean 1); null 1; a map the sum of
its keys and values; an array the sum of its values. JSON length is no measure: a small
integer is one character in JSON and 8 bytes in Firestore, and a character outside ASCII
is up to 4 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def stored_size(value: Any) -> int:  # noqa: PLR0911 - one return per Firestore value type
    """What `value` occupies as a Firestore field value."""
    if value is None:
        return 1
    if isinstance(value, bool):
        return 1
    if isinstance(value, int | float | datetime):
        return 8
    if isinstance(value, str):
        return len(value.encode()) + 1
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, Mapping):
        return sum(stored_size(str(key)) + stored_size(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return sum(stored_size(item) for item in value)
    raise TypeError(f"a value of type {type(value).__name__} is not stored by Firestore")


def clip_utf8(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes, never inside a character, and whether
    it was cut."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text, False
    return encoded[:limit].decode(errors="ignore"), True
