"""The packed event index: lookups, expiry, sealing a full head and the bound on a session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.types import Value

from functions.psychologist.documents import Event, IndexHead, SealedGeneration
from functions.psychologist.telemetry.event_index import (
    ENTRY,
    GENERATION_EVENTS,
    MAX_SEALED,
    Generation,
    body_key,
    entry,
    look_up,
    new_chunk_id,
    plan_index,
)
from shared.errors import ApiError, ErrorCode
from tests.firestore_sizes import LIMIT, fields_size, name_size

pytestmark = pytest.mark.pure

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=24)
CHUNK = new_chunk_id()


def event(number: int, kind: str = "message") -> Event:
    return {"id": f"E{number:025d}", "agent": "dev", "type": kind, "at": "2026-12-02T11:00:00Z"}


def packed(numbers: range, expires_at: datetime = LATER) -> bytes:
    return b"".join(entry(event(n), CHUNK, n % 500, expires_at) for n in numbers)


def _pb(fields: dict[str, Value]) -> dict[str, Any]:
    return {key: Value.pb(value) for key, value in fields.items()}


def head(entries: bytes, sealed: int = 0) -> IndexHead:
    generations: list[SealedGeneration] = [
        {"id": str(n), "expires_at": LATER} for n in range(sealed)
    ]
    return {"entries": entries, "sealed": generations, "generations": sealed, "expires_at": LATER}


def test_an_entry_says_where_its_event_is_kept_and_what_its_body_was() -> None:
    found = Generation(packed(range(3))).find(event(2)["id"])
    assert found is not None
    assert (found.body, found.chunk, found.position) == (body_key(event(2)), CHUNK, 2)
    assert found.body != body_key(event(2, kind="error"))
    assert found.expires_at == LATER


def test_the_newest_entry_of_an_id_wins_and_an_expired_one_reads_as_absent() -> None:
    stale = entry(event(1), CHUNK, 0, NOW)
    again = entry(event(1), CHUNK, 7, LATER)
    wanted = [event(1)["id"], event(2)["id"]]
    assert look_up([Generation(stale)], wanted, NOW) == dict.fromkeys(wanted)
    found = look_up([Generation(stale + again)], wanted, NOW)[event(1)["id"]]
    assert found is not None
    assert found.position == 7
    newest_first = [Generation(again), Generation(stale)]
    assert look_up(newest_first, wanted, NOW)[event(1)["id"]] == found


def test_a_head_with_room_takes_the_batch_as_it_is() -> None:
    written = plan_index(head(packed(range(10))), packed(range(10, 20)), NOW, LATER)
    assert written.sealed is None
    assert written.head["entries"] == packed(range(20))
    assert (written.head["generations"], written.head["expires_at"]) == (0, LATER)


def test_a_full_head_drops_its_expired_entries_before_it_seals() -> None:
    expired = packed(range(GENERATION_EVENTS - 50), expires_at=NOW)
    live = packed(range(GENERATION_EVENTS - 50, GENERATION_EVENTS))
    written = plan_index(head(expired + live), packed(range(10**6, 10**6 + 100)), NOW, LATER)
    assert written.sealed is None
    assert written.head["entries"] == live + packed(range(10**6, 10**6 + 100))


def test_a_head_still_full_is_sealed_as_the_next_generation_and_starts_again() -> None:
    full = packed(range(GENERATION_EVENTS))
    added = packed(range(GENERATION_EVENTS, GENERATION_EVENTS + 5), expires_at=LATER)
    written = plan_index(head(full, sealed=2), added, NOW, LATER + timedelta(seconds=1))
    assert written.sealed == ("2", {"entries": full, "expires_at": LATER})
    assert written.head["entries"] == added
    assert written.head["generations"] == 3
    assert [g["id"] for g in written.head["sealed"]] == ["0", "1", "2"]


def test_sealed_generations_past_their_last_expiry_leave_the_head() -> None:
    current = head(packed(range(3)), sealed=3)
    current["sealed"][0]["expires_at"] = NOW
    written = plan_index(current, packed(range(3, 4)), NOW, LATER)
    assert [g["id"] for g in written.head["sealed"]] == ["1", "2"]
    assert written.head["generations"] == 3


def test_a_session_with_its_most_live_generations_takes_no_more_events() -> None:
    full = head(packed(range(GENERATION_EVENTS)), sealed=MAX_SEALED)
    with pytest.raises(ApiError, match="send further events to a new session") as refused:
        plan_index(full, packed(range(GENERATION_EVENTS, GENERATION_EVENTS + 1)), NOW, LATER)
    assert refused.value.code == ErrorCode.CONFLICT


def test_the_largest_head_and_generation_stay_under_a_mebibyte() -> None:
    """A head that a 500-event batch fills, beside the most sealed generations, measured
    by production's storage-size formula with the longest ids the API admits; a sealed
    generation holds no more entries than a full head."""
    almost = head(packed(range(GENERATION_EVENTS - 500)), sealed=MAX_SEALED)
    written = plan_index(
        almost, packed(range(GENERATION_EVENTS - 500, GENERATION_EVENTS)), NOW, LATER
    )
    assert written.sealed is None
    name = "projects/" + "p" * 128 + "/sessions/" + "s" * 128 + "/event_index/head"
    size = name_size(name) + fields_size(_pb(_helpers.encode_dict(written.head))) + 32
    assert GENERATION_EVENTS * ENTRY.size < size < LIMIT
