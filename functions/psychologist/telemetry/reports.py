"""What a telemetry record says, once its source's row has read it: the event it becomes,
the turn it belongs to, and the tokens and cost it reports. Several records may report one
tool call or one model request (a log and a span, a span and its execution child): they
share an event id, derived from the call's id, and `merged` combines them into one event
that keeps what each said."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from ulid import ULID

from functions.psychologist.documents import Event, SessionUsage

MAX_DATA_BYTES = 8 * 1024
"""As for an event sent to the events endpoint."""
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
FAILED_TYPES = {"tool.call": "tool.error", "model.request": "model.error"}
"""A merged event's type when one of its reports says the call failed."""


@dataclass(frozen=True)
class Turn:
    """The turn (one prompt's run) a record belongs to; `ends` when the record is the
    turn's own root span, then `failed` says whether it ended in error."""

    id: str
    ends: bool = False
    failed: bool = False


@dataclass(frozen=True)
class Report:
    session_id: str
    event: Event
    mergeable: bool = False
    """Another record may report the same call: a second report is merged, not refused."""
    turn: Turn | None = None


@dataclass
class Reports:
    """An export's records as events, by session, and the records that could not be used."""

    events: dict[str, dict[str, Event]] = field(default_factory=lambda: defaultdict(dict))
    mergeable: set[str] = field(default_factory=set)
    turns: dict[str, list[Turn]] = field(default_factory=lambda: defaultdict(list))
    sources: dict[str, str] = field(default_factory=dict)
    """Session id → the source its records came from."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Why records were not used → how many."""

    def add(self, report: Report, source: str) -> None:
        session = self.events[report.session_id]
        event_id = report.event["id"]
        earlier = session.get(event_id)
        session[event_id] = report.event if earlier is None else merged(earlier, report.event)
        if report.mergeable:
            self.mergeable.add(event_id)
        if report.turn is not None:
            self.turns[report.session_id].append(report.turn)
        self.sources.setdefault(report.session_id, source)

    def reject(self, reason: str, count: int = 1) -> None:
        self.rejected[reason] += count

    def by_session(self) -> dict[str, list[Event]]:
        """Each session's events in time order."""
        return {
            session_id: sorted(events.values(), key=lambda event: (event["at"], event["id"]))
            for session_id, events in self.events.items()
        }


def call_event_id(kind: str, call_id: str) -> str:
    """The event id every report of one call shares: a ULID made of a hash of the call id
    (its time part is not a time)."""
    return str(
        ULID.from_bytes(hashlib.blake2b(f"{kind}:{call_id}".encode(), digest_size=16).digest())
    )


USAGE_KEYS = ("usage", "metered")
"""Where an event carries tokens and cost: `usage` per request (logs and spans), `metered`
from a metric point; the session keeps the two apart, for they count the same requests."""


def usage_of(event: Event, key: str = "usage") -> SessionUsage:
    usage = (event.get("data") or {}).get(key) or {}
    return {name: usage[name] for name in USAGE_FIELDS if isinstance(usage.get(name), int | float)}


def failed(event: Event) -> bool:
    return event["type"].endswith(".error")


def merged(first: Event, second: Event) -> Event:
    """One event from two reports of the same call: every report named under
    `data.reports` and every attribute either kept (the first's where both name one),
    the latest time, failed if either says so, the first tool name and error, and each
    usage figure the larger of the two (reports of one request repeat it)."""
    one, two = first.get("data") or {}, second.get("data") or {}
    data: dict[str, Any] = {**two, **one}
    data["reports"] = {**(two.get("reports") or {}), **(one.get("reports") or {})}
    data["attributes"] = {**(two.get("attributes") or {}), **(one.get("attributes") or {})}
    for key in USAGE_KEYS:
        before, after = usage_of(first, key), usage_of(second, key)
        usage = {
            name: max(before.get(name, 0), after.get(name, 0))
            for name in USAGE_FIELDS
            if name in before or name in after
        }
        if usage:
            data[key] = usage
    kinds = sorted(
        {first["type"], second["type"]}, key=lambda kind: (not kind.endswith(".error"), kind)
    )
    event: Event = {
        "id": first["id"],
        "agent": first["agent"],
        "type": kinds[0],
        "at": max(first["at"], second["at"]),
        "data": fitted(data),
    }
    task = first.get("taskId") or second.get("taskId")
    if task:
        event["taskId"] = task
    return event


def fitted(data: dict[str, Any]) -> dict[str, Any]:
    """`data` within MAX_DATA_BYTES: the largest attributes dropped first, then the
    largest reports, each cut marked."""
    attributes: dict[str, Any] = data.get("attributes") or {}
    while _size(data) > MAX_DATA_BYTES and attributes:
        del attributes[max(attributes, key=lambda name: _size(attributes[name]))]
        data["attributesCut"] = True
    reports: dict[str, Any] = data.get("reports") or {}
    while _size(data) > MAX_DATA_BYTES and len(reports) > 1:
        del reports[max(reports, key=lambda name: _size(reports[name]))]
        data["reportsCut"] = True
    return data


def _size(value: Any) -> int:
    return len(json.dumps(value))
