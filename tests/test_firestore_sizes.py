"""The size check measures documents by Firestore's storage-size formula; every document
the suite writes is checked against the 1 MiB limit at the end of the run."""

from __future__ import annotations

from typing import Any

from shared.clients import db
from tests.firestore_sizes import LIMIT, CommitRecorder, document_size, oversized


def written(path: str, data: dict[str, Any]) -> Any:
    batch = db().batch()
    batch.set(db().document(path), data)
    (write,) = batch._write_pbs
    return write


def test_a_document_measures_as_firestore_s_storage_size_example(emulator: object) -> None:
    """The worked example of Firestore's storage-size page: 147 bytes."""
    task = {
        "type": "Personal",
        "done": False,
        "priority": 1,
        "description": "Learn Cloud Firestore",
    }
    assert document_size(written("users/jeff/tasks/my_task_id", task)) == 147


def test_nested_maps_arrays_and_utf8_count_every_byte(emulator: object) -> None:
    data = {"é": ["ab", None, 2.5], "m": {"k": True}}
    base = document_size(written("c/d", {}))
    assert base == (2 + 2 + 16) + 32
    expected = (len("é".encode()) + 1) + (3 + 1 + 8) + (2 + (2 + 1))
    assert document_size(written("c/d", data)) == base + expected


def test_a_document_over_the_limit_is_reported(emulator: object) -> None:
    recorder = CommitRecorder()
    recorder._measure(written("runs/r", {"rejected": "x" * LIMIT}))
    recorder._measure(written("runs/s", {"rejected": "x" * 10}))
    assert oversized(recorder) == [f"runs: {LIMIT + 1 + 9 + 5 + 2 + 16 + 32:,} bytes (runs/r)"]
