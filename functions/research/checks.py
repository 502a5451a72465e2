"""Checks on the model's answer before anything is stored. Output is never repaired."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from functions.research.citations import references
from functions.research.documents import Answer, Rejection
from shared.answers import parse_strictly
from shared.gemini import model_schema
from shared.validation import Schema, issues_for, load_schema

_NUMBER_WORDS = (
    r"\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a (?:half|third|quarter)|half|dozens?|hundreds?"
)
_COUNTED_THINGS = (
    r"items?|pieces? of evidence|evidence items?|sources?|documents?|respondents?|people|"
    r"persons?|users?|customers?|participants?|interviewees?|reviews?|comments?|responses?|"
    r"mentions?|quotes?|excerpts?|records?|entries|posts?|messages?"
)
QUANTITATIVE = re.compile(
    rf"\d+(?:[.,]\d+)?\s*(?:%|percent\b|per cent\b|pct\b)"
    rf"|\b(?:{_NUMBER_WORDS})\s+(?:of|out of|in)\s+(?:the\s+)?(?:{_NUMBER_WORDS}|all)\b"
    rf"|\b(?:{_NUMBER_WORDS})\s+(?:of the\s+)?(?:{_COUNTED_THINGS})\b",
    re.IGNORECASE,
)


def contract_answer_schema() -> Schema:
    """The contract's `message.answer` object schema, exactly as published."""
    message = load_schema("research/status.response")["properties"]["message"]["anyOf"][0]
    return dict(message["properties"]["answer"]["anyOf"][0])


@cache
def gemini_answer_schema() -> Schema:
    """The answer schema handed to Gemini, derived from the contract's, not retyped."""
    return model_schema(contract_answer_schema())


def parse_answer(data: Any) -> Answer:
    """An answer that passed the published schema, in its typed shape."""
    return parse_strictly(Answer, data)


def _texts(answer: Answer) -> Iterator[tuple[str, str]]:
    yield "answer.statement", answer["answer"]["statement"]
    yield "answer.uncertainty", answer["answer"]["uncertainty"]
    for i, finding in enumerate(answer["findings"]):
        yield f"findings[{i}].statement", finding["statement"]
        yield f"findings[{i}].uncertainty", finding["uncertainty"]
    for i, entry in enumerate(answer["sentiment"]):
        yield f"sentiment[{i}].uncertainty", entry["uncertainty"]
    for i, suggestion in enumerate(answer["query_suggestions"]):
        yield f"query_suggestions[{i}].rationale", suggestion["rationale"]
    for i, limitation in enumerate(answer["limitations"]):
        yield f"limitations[{i}]", limitation


def _kind_rejections(request_kind: str, answer: Answer) -> list[Rejection]:
    required = {"sentiment": answer["sentiment"], "query_suggestions": answer["query_suggestions"]}
    if request_kind in required and not required[request_kind]:
        return [{"path": request_kind, "reason": f"a {request_kind} run must fill {request_kind}"}]
    return []


def rejections(answer: Answer, request_kind: str, shown: dict[str, int]) -> list[Rejection]:
    """Every reason a schema-valid answer cannot be stored; empty when it passes.

    `shown` maps each evidence id the model was given to the revision it was given.
    """
    found: list[Rejection] = []
    for path, ref in references(answer):
        evidence_id, revision = ref["evidence_id"], ref["revision"]
        if evidence_id not in shown:
            found.append(
                {
                    "path": path,
                    "reason": f"cites evidence {evidence_id}, which the conversation does not hold",
                }
            )
        elif shown[evidence_id] != revision:
            found.append(
                {
                    "path": path,
                    "reason": f"cites revision {revision} of {evidence_id}; "
                    f"the conversation holds revision {shown[evidence_id]}",
                }
            )
    for path, text in _texts(answer):
        match = QUANTITATIVE.search(text)
        if match:
            found.append(
                {
                    "path": path,
                    "reason": f"states a quantity of the evidence ({match.group(0)!r}) "
                    "while quantitative_claims must be false",
                }
            )
    return found + _kind_rejections(request_kind, answer)


def issues_for_answer(answer: Any) -> list[Rejection]:
    return [
        {"path": ".".join(str(p) for p in issue["path"]) or "$", "reason": issue["message"]}
        for issue in issues_for("research/answer", answer)
    ]
