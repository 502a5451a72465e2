"""Checks on the model's answer before anything is stored. Output is never repaired by
code: a quote that is not in its item is named back to the model, once (the worker)."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from functions.research.citations import references
from functions.research.documents import Answer, Rejection
from functions.research.quotes import Cited, refusal
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


QUOTE_SCHEMA: Schema = {
    "type": "string",
    "description": "The shortest passage of the cited item's text, copied verbatim, that "
    "supports the statement.",
}


def _with_quotes(schema: Any) -> Any:
    """Every citation (an object naming `evidence_id` and `revision`) also asks for the
    passage it rests on."""
    if isinstance(schema, list):
        return [_with_quotes(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: _with_quotes(value) for key, value in schema.items()}
    properties = result.get("properties")
    if isinstance(properties, dict) and {"evidence_id", "revision"} <= set(properties):
        result["properties"] = {**properties, "quote": QUOTE_SCHEMA}
        result["required"] = [*result.get("required", []), "quote"]
    return result


@cache
def gemini_answer_schema() -> Schema:
    """The answer schema handed to Gemini: the contract's, not retyped, with a verbatim
    quote asked for each citation (`split_quotes` takes them out again)."""
    with_quotes: Schema = _with_quotes(model_schema(contract_answer_schema()))
    return with_quotes


def split_quotes(data: Any) -> tuple[Any, list[Cited]]:
    """The model's answer without its quotes (what the contract's schema then checks), and
    each citation's quote by where it stands. A citation without a quote quotes nothing.
    Data of the wrong shape is handed back for the schema check to refuse."""
    if not isinstance(data, dict):
        return data, []
    answer = copy.deepcopy(data)
    quotes = [ref.pop("quote", "") for ref in _citation_objects(answer)]
    if issues_for("research/answer", answer):
        return answer, []
    return answer, [
        Cited(path, ref["evidence_id"], ref["revision"], quote if isinstance(quote, str) else "")
        for (path, ref), quote in zip(references(parse_answer(answer)), quotes, strict=True)
    ]


def _citation_objects(answer: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every object of the answer that cites an item, in the order `references` walks a
    checked answer."""
    sections: list[Any] = [answer.get("answer")]
    for name in ("findings", "query_suggestions"):
        entries = answer.get(name)
        sections += entries if isinstance(entries, list) else []
    for section in sections:
        refs = section.get("evidence") if isinstance(section, dict) else None
        for ref in refs if isinstance(refs, list) else []:
            if isinstance(ref, dict):
                yield ref
    entries = answer.get("sentiment")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            yield entry


def quote_refusals(cited: list[Cited], texts: dict[str, str]) -> list[Rejection]:
    """Each citation whose quote is not in the cited item's text, and why."""
    return [
        {"path": f"{each.path}.quote", "reason": reason}
        for each in cited
        if (reason := refusal(each, texts)) is not None
    ]


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
