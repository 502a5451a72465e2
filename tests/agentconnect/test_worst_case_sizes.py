"""The largest session input the contract accepts, built for the most index entries, is
stored and evaluated; the suite's size and index-entry check (tests/firestore_sizes.py)
holds every document it wrote under Firestore's limits."""

from __future__ import annotations

import json

from functions.agentconnect.service import MAX_INPUT_BYTES
from shared.clients import db
from tests.agentconnect.conftest import AGENT, Connect, answer
from tests.api import Configure
from tests.firestore_sizes import ENTRY_LIMIT, CommitRecorder, index_entries


def crafted_input() -> dict[str, dict[str, int]]:
    """100 maps (the most `input` may hold) of short keys holding 0, as many as 64 KiB of
    JSON takes: two index entries for every few bytes."""
    per_group = 1
    while True:
        candidate = {f"g{g}": {f"{k:x}": 0 for k in range(per_group + 1)} for g in range(100)}
        if len(json.dumps(candidate, separators=(",", ":")).encode()) > MAX_INPUT_BYTES:
            return {f"g{g}": {f"{k:x}": 0 for k in range(per_group)} for g in range(100)}
        per_group += 1


def test_a_session_input_crafted_for_index_entries_is_stored_within_the_limit(
    configured: Connect,
) -> None:
    crafted = crafted_input()
    configured.world.gemini.answer_json(answer(True, 0.95))
    seq = configured.start(input=crafted)["seq"]
    assert configured.frozen(seq)["outcome"] == "selected"
    recorder = CommitRecorder()
    session = db().collection(f"orgs/{configured.org}/agents/{AGENT}/agent_sessions")
    (stored,) = list(session.stream())
    batch = db().batch()
    batch.set(stored.reference, stored.to_dict() or {})
    (write,) = batch._write_pbs
    unexempted = index_entries(write, set(), 0) or 0
    assert unexempted > 15_000
    assert (index_entries(write, recorder.exempt, 0) or 0) < ENTRY_LIMIT // 100


def test_raw_texts_are_cut_by_utf8_bytes(configured: Connect, configure: Configure) -> None:
    configure(AGENTCONNECT_RAW_TEXT_LIMIT="400")
    configured.world.gemini.answer_text("é" * 400)
    body = configured.frozen(configured.start()["seq"])
    shown = body["steps"][0]["rawResponse"]
    assert shown["truncated"] is True
    assert "é" in shown["text"]
    assert 396 < len(shown["text"].encode()) <= 400
