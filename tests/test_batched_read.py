"""`shared.store.read_all` builds its snapshots from the batched read's raw answers, past
the library's own parsing: they must equal what the library's `get_all` gives, found,
missing, nested, timed and vector fields alike, in a transaction or not."""

from __future__ import annotations

from datetime import UTC, datetime

from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector

from shared.clients import db
from shared.store import Snapshot, read_all


def test_a_batched_read_equals_the_librarys_for_every_kind_of_field(emulator: object) -> None:
    collection = db().collection("batched_reads")
    stored = {
        "text": "é ünïcode",
        "number": 3,
        "real": 0.25,
        "flag": True,
        "nothing": None,
        "when": datetime(2026, 12, 5, 4, 0, 0, 123456, tzinfo=UTC),
        "nested": {"list": [1, "two", {"three": 3.0}], "empty": {}},
        "bytes": b"\x00\x01",
        "embedding": Vector([0.1, 0.2, 0.3]),
        "ref": collection.document("other"),
    }
    collection.document("full").set(stored)
    collection.document("bare").set({})
    refs = [collection.document(name) for name in ("full", "bare", "missing", "full")]
    expected = {s.reference.path: s for s in db().get_all(refs)}
    for found in (read_all(refs), _in_transaction(refs)):
        assert set(found) == set(expected)
        for path, snapshot in found.items():
            library = expected[path]
            assert snapshot.exists == library.exists
            assert snapshot.to_dict() == library.to_dict()
            assert snapshot.update_time == library.update_time
            assert snapshot.create_time == library.create_time
    assert read_all(refs)[collection.document("full").path].to_dict() == stored


def _in_transaction(refs: list[firestore.DocumentReference]) -> dict[str, Snapshot]:
    @firestore.transactional
    def read(transaction: firestore.Transaction) -> dict[str, Snapshot]:
        return read_all(refs, transaction)

    found: dict[str, Snapshot] = read(db().transaction())
    return found
