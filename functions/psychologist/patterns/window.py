"""The window a refresh groups and a list reads: 30 days, ending now by default."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

WINDOW_DAYS = 30


@dataclass(frozen=True)
class Window:
    since: datetime
    until: datetime

    @classmethod
    def ending(cls, until: datetime, days: int = WINDOW_DAYS) -> Window:
        return cls(until - timedelta(days=days), until)
