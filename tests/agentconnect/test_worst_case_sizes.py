"""The largest session input the contract accepts, built for the most index entries, is
stored and evaluated; the suite's size and index-entry check (tests/firestore_sizes.py)
holds every document it wrote under Firestore's limits."""

from __future__ import annotations

import json

from functions.agentconnect.service import MAX_INPUT_BYTES
from shared.clients import db
from tests.agentconnect.conftest import AGENT, SELECTION, Connect, answer, selection_with
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


def eleven_steps_that_never_decide() -> dict[str, object]:
    """The longest chain the contract accepts (the first decision and ten steps), each
    asking a yes/no question whose rule no answer reaches, so every step is asked."""
    never = {"model": "gemini-2.5-pro", "when": {"type": "boolean", "thresholds": {"true": 1.0}}}
    first = {**SELECTION["decision"], "rules": [never]}
    steps = [
        {
            "id": f"step-{k}",
            "decisionId": f"caa985ad-f12f-4ef1-943f-c1812738ec{k:02d}",
            "question": {"type": "boolean", "instructions": f"Question {k}?"},
            "rules": [never],
        }
        for k in range(10)
    ]
    return selection_with(decision=first, steps=steps)


def test_the_longest_chain_with_the_largest_raw_texts_fits_in_its_details_document(
    configured: Connect, configure: Configure
) -> None:
    """Every raw text cut at the largest `AGENTCONNECT_RAW_TEXT_LIMIT` (in UTF-8 bytes),
    answers long enough to fill theirs (an output limit raised to let them), beside the
    largest input: the suite's size check at the end of the run holds the details
    document under 1 MiB."""
    configure(AGENTCONNECT_RAW_TEXT_LIMIT="32768", AGENTCONNECT_OUTPUT_TOKEN_LIMIT="16384")
    assert configured.configure(eleven_steps_that_never_decide()).status_code == 201
    padded = json.dumps(answer(False, 0.5)) + " " * 40_000
    for _ in range(11):
        configured.world.gemini.answer_text(padded)
    notes = "x" * (MAX_INPUT_BYTES - 20)
    body = configured.frozen(configured.start(input={"notes": notes})["seq"])
    assert body["outcome"] == "defaulted", body["reason"]
    assert len(body["steps"]) == 11
    texts = [step[side] for step in body["steps"] for side in ("rawRequest", "rawResponse")]
    assert all(text["truncated"] for text in texts)
    assert all(32_760 < len(text["text"].encode()) <= 32_768 for text in texts)
