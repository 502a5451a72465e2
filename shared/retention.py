"""Retention: every retained document carries `expires_at`; reads treat a past one as gone.

Firestore's TTL deletion lags by up to a day, so a document can still exist after its
`expires_at`. Every read goes through `is_expired` instead of trusting existence.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any


def utcnow() -> datetime:
    return datetime.now(UTC)


def expires_at(created_at: datetime, hours: int) -> datetime:
    return created_at + timedelta(hours=hours)


def is_expired(document: Mapping[str, Any], now: datetime | None = None) -> bool:
    deadline = document.get("expires_at")
    if deadline is None:
        return False
    return bool(deadline <= (now or utcnow()))


def iso(moment: datetime) -> str:
    """RFC 3339 in UTC with millisecond precision and a `Z` suffix."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_instant(text: str) -> datetime:
    """An RFC 3339 timestamp (as the schemas' `date-time` admits) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(moment: datetime) -> int:
    """An instant as whole microseconds since the epoch: a number, so that Firestore's
    `Minimum` and `Maximum` transforms can keep the earliest and latest of many writes."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)
