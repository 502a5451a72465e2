"""The size check measures documents by Firestore's storage-size formula; every document
the suite writes is checked against the 1 MiB limit at the end of the run."""

from __future__ import annotations

from typing import Any

from shared.budgets import stored_size
from shared.clients import db
from tests.firestore_sizes import LIMIT, CommitRecorder, document_size, index_entries, oversized


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
    size = LIMIT + 1 + 9 + 5 + 2 + 16 + 32
    assert oversized(recorder) == [
        f"a document over Firestore's 1 MiB: runs: {size:,} bytes (runs/r)"
    ]


def test_the_run_reports_the_largest_document_whichever_worker_wrote_it(emulator: object) -> None:
    small, large = CommitRecorder(), CommitRecorder()
    small._measure(written("runs/s", {"rejected": "x" * 10}))
    large._measure(written("runs/r", {"rejected": "x" * LIMIT}))
    for workers in ((small, large), (large, small)):
        run = CommitRecorder()
        for worker in workers:
            run.absorb(worker.exported())
        assert oversized(run) == oversized(large) != []


def test_index_entries_count_two_a_field_one_a_distinct_element_and_none_when_exempt(
    emulator: object,
) -> None:
    data = {"a": 1, "m": {"x": "s", "y": {"z": 2}}, "tags": ["p", "q", "p"], "big": {"k": 1}}
    write = written("c/d", data)
    assert index_entries(write, set(), 0) == 2 + 2 + 2 + 2 + 2
    assert index_entries(write, {("c", "big"), ("c", "m.y")}, 3) == 2 + 2 + 2 + 3


def test_a_document_over_40000_index_entries_is_reported(emulator: object) -> None:
    recorder = CommitRecorder()
    recorder.exempt = set()
    recorder._measure(written("agent_sessions/s", {"input": {f"k{n}": n for n in range(20_001)}}))
    assert oversized(recorder) == [
        "a document over Firestore's 40,000 index entries: agent_sessions: 40,002 entries "
        "(agent_sessions/s)"
    ]


def test_the_declared_exemptions_keep_a_crafted_session_input_out_of_the_indexes(
    emulator: object,
) -> None:
    recorder = CommitRecorder()
    recorder._measure(written("agent_sessions/s", {"input": {f"k{n}": n for n in range(20_001)}}))
    assert oversized(recorder) == []


def test_the_stored_size_budgets_use_agrees_with_the_commit_measure(emulator: object) -> None:
    data = {"é": ["ab", None, 2.5, True], "m": {"k": 7, "t": "\U0001d538"}}
    empty = document_size(written("c/d", {}))
    assert empty is not None
    assert document_size(written("c/d", data)) == empty + stored_size(data)
