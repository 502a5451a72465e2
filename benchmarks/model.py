"""How the Gemini stand-in answers during the bench: at once, with answers that pass every
check, citing what the prompt shows."""

from __future__ import annotations

import json
import re

from cli.gemini_stand_in import Recorded, Reply, cited_research_answer

_FIRST_CITATION = re.compile(r'"evidence_id":"([^"]+)","revision":(\d+)')


def stand_in_model(request: Recorded) -> Reply:
    """Answers each worker's structured request by the shape of its schema."""
    schema = request.body["generationConfig"]["responseJsonSchema"]["properties"]
    if "hypotheses" in schema:
        return Reply(text=json.dumps({"hypotheses": []}))
    if "value" in schema:
        return Reply(text=json.dumps({"value": True, "probability": 0.9}))
    found = _FIRST_CITATION.search(request.prompt)
    if found is None:
        raise ValueError("a research prompt without evidence")
    answer = cited_research_answer([(found.group(1), int(found.group(2)))])
    return Reply(text=json.dumps(answer))
