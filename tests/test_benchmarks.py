"""The bench's own parts that could silently measure the wrong thing: the round-trip
counter on the Firestore client's channel, and the stand-in model's answers."""

from __future__ import annotations

import json

from benchmarks.counting import CallCounter
from benchmarks.model import stand_in_model
from cli.gemini_stand_in import Recorded
from functions.research.checks import gemini_answer_schema, issues_for_answer
from functions.research.documents import Evidence
from functions.research.prompts import build_prompt
from shared.clients import db


def test_every_firestore_call_of_a_client_passes_the_channel_interceptors(
    counter: CallCounter,
) -> None:
    db().document("bench/one").set({"n": 1})
    list(db().get_all([db().document("bench/one"), db().document("bench/two")]))
    list(db().collection("bench").stream())
    assert counter.calls == ["Commit", "BatchGetDocuments", "RunQuery"]


def test_the_stand_in_model_cites_what_a_real_research_prompt_shows() -> None:
    evidence: dict[str, Evidence] = {
        "3f2b7c1e-8a4d-4e6f-9b0a-1c2d3e4f5a6b": {
            "text": "Slow setup.",
            "source": None,
            "revision": 3,
        }
    }
    prompt = build_prompt("overview", None, evidence)
    body = {
        "contents": [{"role": "user", "parts": [{"text": prompt.text}]}],
        "generationConfig": {"responseJsonSchema": gemini_answer_schema()},
    }
    reply = stand_in_model(Recorded(model="m", body=body, headers={}))
    answer = json.loads(reply.text or "")
    assert issues_for_answer(answer) == []
    assert answer["answer"]["evidence"] == [
        {"evidence_id": "3f2b7c1e-8a4d-4e6f-9b0a-1c2d3e4f5a6b", "revision": 3}
    ]
