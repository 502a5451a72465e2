"""The worst cases the contract accepts, stored within Firestore's limits: a session input
built for the most index entries, and the evaluation of the longest chain of the longest
questions beside the largest raw texts, title and input; a selection too large to store is
refused at its PUT. The suite's size and index-entry check (tests/firestore_sizes.py)
also holds every document the suite wrote under those limits."""

from __future__ import annotations

import json
import re
from typing import Any

from functions.agentconnect.service import MAX_INPUT_BYTES
from shared.budgets import stored_size
from shared.clients import db
from shared.http import MAX_BODY_BYTES
from shared.validation import issues_for
from tests.agentconnect.conftest import AGENT, Connect, answer, selection_with
from tests.api import Configure, document
from tests.firestore_sizes import (
    ENTRY_LIMIT,
    LIMIT,
    CommitRecorder,
    document_size,
    index_entries,
)


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


WIDE = "€"
"""Three bytes in UTF-8: the most a character of the selection's texts costs in it."""


def option_names() -> list[str]:
    """The most options a choice question may have, each name as long as it may be."""
    return [f"o{c:02d}".ljust(64, "_") for c in range(20)]


def rule_on_every_option(threshold: float) -> dict[str, Any]:
    thresholds = dict.fromkeys(option_names(), threshold)
    return {"fastMode": False, "when": {"type": "choice", "thresholds": thresholds}}


def longest_chain_of_longest_questions() -> dict[str, Any]:
    """The longest chain the contract accepts (the first decision and ten steps, with the
    longest ids), each a choice question of the longest instructions and the most,
    longest criteria, in three-byte characters; each step's rule holds only at
    probability 1, on any option."""
    question = {
        "type": "choice",
        "instructions": WIDE * 4000,
        "criteria": dict.fromkeys(option_names(), WIDE * 1000),
    }
    steps = [
        {
            "id": f"step-{k:02d}".ljust(64, "-"),
            "decisionId": f"caa985ad-f12f-4ef1-943f-c1812738ec{k:02d}",
            "question": question,
            "rules": [rule_on_every_option(1.0)],
        }
        for k in range(11)
    ]
    first = {key: value for key, value in steps[0].items() if key != "id"}
    return selection_with(decision=first, steps=steps[1:])


def as_utf8(selection: dict[str, Any]) -> bytes:
    """The body as a client sends it: UTF-8, no escapes (an escaped three-byte character
    takes six)."""
    return json.dumps(selection, ensure_ascii=False, separators=(",", ":")).encode()


def put(connect: Connect, selection: dict[str, Any]) -> Any:
    return connect.api.call(
        "PUT",
        connect.path("/model-selection"),
        token=connect.admin,
        headers={"Content-Type": "application/json"},
        raw=as_utf8(selection),
    )


def input_stored_four_times_over() -> dict[str, list[int]]:
    """The most a 64 KiB input can take stored: zeros in an array, two bytes of JSON each
    and eight in Firestore."""
    zeros = (MAX_INPUT_BYTES - len('{"n":[]}') + 1) // 2
    return {"n": [0] * zeros}


def stored_bytes(path: str) -> int:
    """The document at `path` by production Firestore's storage-size formula."""
    batch = db().batch()
    batch.set(db().document(path), document(path))
    (write,) = batch._write_pbs
    return document_size(write) or 0


def test_the_worst_case_evaluation_is_frozen_within_one_document(
    configured: Connect, configure: Configure
) -> None:
    """The longest chain of the longest questions, every raw text cut at the largest
    `AGENTCONNECT_RAW_TEXT_LIMIT` (answers long enough to fill theirs), the longest title
    and the input that is largest stored: the evaluation freezes, its details under 1 MiB
    (the questions are stored once, with the selection's version), and the evaluation
    read shows every step's question and the deciding step's raw texts."""
    configure(AGENTCONNECT_RAW_TEXT_LIMIT="32768", AGENTCONNECT_OUTPUT_TOKEN_LIMIT="16384")
    selection = longest_chain_of_longest_questions()
    assert put(configured, selection).status_code == 201
    padding = " " * 40_000
    for _ in range(10):
        configured.world.gemini.answer_text(json.dumps(answer(option_names()[0], 0.5)) + padding)
    configured.world.gemini.answer_text(json.dumps(answer(option_names()[-1], 1.0)) + padding)
    worst_input = input_stored_four_times_over()
    assert len(json.dumps(worst_input, separators=(",", ":"))) == MAX_INPUT_BYTES - 1
    seq = configured.start(title=WIDE * 500, input=worst_input)["seq"]
    body = configured.frozen(seq)
    assert issues_for("agentconnect/evaluation", body) == []
    assert (body["outcome"], body["decisionId"]) == (
        "selected",
        selection["steps"][-1]["decisionId"],
    )
    assert len(body["steps"]) == 11
    asked = [selection["decision"]["question"]] + [s["question"] for s in selection["steps"]]
    assert [step["question"] for step in body["steps"]] == asked
    assert body["question"] == asked[-1]
    assert body["steps"][-1]["condition"] == rule_on_every_option(1.0)["when"]
    assert [body["rawRequest"], body["rawResponse"]] == [
        body["steps"][-1]["rawRequest"],
        body["steps"][-1]["rawResponse"],
    ]
    texts = [step[side] for step in body["steps"] for side in ("rawRequest", "rawResponse")]
    assert all(text["truncated"] for text in texts)
    assert all(32_760 < len(text["text"].encode()) <= 32_768 for text in texts)
    details = stored_bytes(f"orgs/{configured.org}/agents/{AGENT}/evaluation_details/{seq}")
    assert details < LIMIT, f"the details take {details:,} bytes"


def filled_to_the_body_limit(selection: dict[str, Any]) -> dict[str, Any]:
    """`selection` with rules on every option added, step by step, while its body stays
    within the 1 MiB request limit: each threshold takes 8 bytes stored, one in JSON."""
    decisions = [selection["decision"], *selection["steps"]]
    added = 0
    while True:
        rules = decisions[added % len(decisions)]["rules"]
        rules.append(rule_on_every_option(1))
        if len(as_utf8(selection)) > MAX_BODY_BYTES:
            rules.pop()
            return selection
        added += 1


def test_a_selection_too_large_to_store_is_refused_with_its_size_and_nothing_changes(
    configured: Connect,
) -> None:
    agent = f"orgs/{configured.org}/agents/{AGENT}"
    before = document(agent)
    selection = filled_to_the_body_limit(longest_chain_of_longest_questions())
    assert stored_size(selection) > LIMIT
    reply = put(configured, selection)
    assert reply.status_code == 400, reply.text
    (issue,) = reply.json()["issues"]
    assert (issue["path"], issue["code"]) == ([], "too_big")
    said = re.fullmatch(
        r"the selection is ([\d,]+) bytes as Firestore stores it; (.*)", issue["message"]
    )
    assert said is not None, issue["message"]
    assert int(said[1].replace(",", "")) > stored_size(selection)
    assert said[2] == f"a document holds at most {LIMIT:,}"
    assert document(agent) == before
    assert not db().document(f"{agent}/selections/2").get().exists
