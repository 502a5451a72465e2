"""A session's event index, packed: which events it has received, a hash of each one's
body and where each is kept, in one unindexed field of a few documents instead of one
document per event.

An entry is `ENTRY.size` bytes: the first 12 bytes of sha256 of the event's id and of
its canonical JSON, the chunk that holds it (12 random bytes, its document id in hex),
its place in that chunk and when it expires (microseconds since the epoch). Twelve
bytes of a hash leave a chance of about 2**-96 that two ids of one session meet.

The head takes a batch's entries; when it would pass `GENERATION_EVENTS` its expired
entries are dropped, and if it is still full they move to a sealed generation of their
own in the same commit. A session keeps at most `MAX_SEALED` live generations, which
bounds what a batch reads; every document stays under 1 MiB by construction."""

from __future__ import annotations

import hashlib
import json
import secrets
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from functions.psychologist.documents import Event, IndexGeneration, IndexHead, SealedGeneration
from shared.errors import conflict
from shared.retention import from_micros, to_micros

ENTRY = struct.Struct(">12s12s12sHq")
KEY_BYTES = 12
CHUNK_ID_BYTES = 12
GENERATION_EVENTS = 10_000
"""Entries a generation holds: 460,000 bytes, well under Firestore's 1 MiB."""
MAX_SEALED = 100
"""Sealed generations a session may hold at once: a million events in one retention."""


def id_key(event_id: str) -> bytes:
    return hashlib.sha256(event_id.encode()).digest()[:KEY_BYTES]


def body_key(event: Event) -> bytes:
    """What tells a replay (the same body) from another event under a used id."""
    return hashlib.sha256(json.dumps(event, sort_keys=True).encode()).digest()[:KEY_BYTES]


def new_chunk_id() -> str:
    return secrets.token_hex(CHUNK_ID_BYTES)


@dataclass(frozen=True)
class Indexed:
    """What the index holds of one received event."""

    body: bytes
    chunk: str
    position: int
    expires_at: datetime


def entry(event: Event, chunk: str, position: int, expires_at: datetime) -> bytes:
    return ENTRY.pack(
        id_key(event["id"]),
        body_key(event),
        bytes.fromhex(chunk),
        position,
        to_micros(expires_at),
    )


def _decoded(packed: bytes, offset: int) -> Indexed:
    _, body, chunk, position, micros = ENTRY.unpack_from(packed, offset)
    return Indexed(body, chunk.hex(), position, from_micros(micros))


class Generation:
    """One document's packed entries, looked up by event id. A later entry of an id (an
    event received anew after it expired) wins over an earlier one."""

    def __init__(self, packed: bytes) -> None:
        self.packed = packed
        self._offsets = {
            packed[offset : offset + KEY_BYTES]: offset
            for offset in range(0, len(packed), ENTRY.size)
        }

    def __len__(self) -> int:
        return len(self.packed) // ENTRY.size

    def find(self, event_id: str) -> Indexed | None:
        offset = self._offsets.get(id_key(event_id))
        return _decoded(self.packed, offset) if offset is not None else None

    def live(self, now: datetime) -> bytes:
        """The entries that have not expired."""
        return b"".join(
            self.packed[offset : offset + ENTRY.size]
            for offset in range(0, len(self.packed), ENTRY.size)
            if _decoded(self.packed, offset).expires_at > now
        )

    def latest_expiry(self) -> datetime:
        offsets = range(0, len(self.packed), ENTRY.size)
        return max(_decoded(self.packed, offset).expires_at for offset in offsets)


def live_sealed(head: IndexHead | None, now: datetime) -> list[SealedGeneration]:
    """The sealed generations that may still hold an unexpired entry, newest first."""
    sealed = head["sealed"] if head is not None else []
    return [generation for generation in reversed(sealed) if generation["expires_at"] > now]


def look_up(
    generations: Sequence[Generation], event_ids: Iterable[str], now: datetime
) -> dict[str, Indexed | None]:
    """Each id's newest unexpired entry in `generations` (newest first), None if none."""
    found: dict[str, Indexed | None] = {}
    for event_id in event_ids:
        entries = (generation.find(event_id) for generation in generations)
        newest = next((indexed for indexed in entries if indexed is not None), None)
        found[event_id] = newest if newest is not None and newest.expires_at > now else None
    return found


@dataclass(frozen=True)
class IndexWrite:
    head: IndexHead
    sealed: tuple[str, IndexGeneration] | None
    """A generation to create beside the head, by its document id."""


def plan_index(
    head: IndexHead | None, added: bytes, now: datetime, expires_at: datetime
) -> IndexWrite:
    """The head after a batch `added` its entries (each expiring at `expires_at`): expired
    entries dropped when it fills, and its entries sealed when it is still full. A session
    past `MAX_SEALED` live generations takes no more events until some expire."""
    kept = head["entries"] if head is not None else b""
    sealed = list(reversed(live_sealed(head, now)))
    generations = head["generations"] if head is not None else 0
    created: tuple[str, IndexGeneration] | None = None
    if len(kept) + len(added) > GENERATION_EVENTS * ENTRY.size:
        kept = Generation(kept).live(now)
    if kept and len(kept) + len(added) > GENERATION_EVENTS * ENTRY.size:
        if len(sealed) >= MAX_SEALED:
            raise conflict(
                f"The session holds {len(sealed) * GENERATION_EVENTS:,} events that have not "
                "expired, the most one session keeps; send further events to a new session."
            )
        generation_id = str(generations)
        latest = Generation(kept).latest_expiry()
        created = (generation_id, {"entries": kept, "expires_at": latest})
        sealed.append({"id": generation_id, "expires_at": latest})
        generations += 1
        kept = b""
    written: IndexHead = {
        "entries": kept + added,
        "sealed": sealed,
        "generations": generations,
        "expires_at": expires_at,
    }
    return IndexWrite(written, created)
