"""The bench's round-trip counter sees every call a Firestore client makes."""

from __future__ import annotations

from benchmarks.counting import CallCounter
from shared.clients import db


def test_every_firestore_call_of_a_client_passes_the_channel_interceptors(
    counter: CallCounter,
) -> None:
    db().document("bench/one").set({"n": 1})
    list(db().get_all([db().document("bench/one"), db().document("bench/two")]))
    list(db().collection("bench").stream())
    assert counter.calls == ["Commit", "BatchGetDocuments", "RunQuery"]
