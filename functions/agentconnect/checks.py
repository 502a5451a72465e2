"""Checks on a step's answer from Gemini: the schema it is asked for, and the answer
accepted only when it is one of the question's options. Nothing is coerced."""

from __future__ import annotations

from typing import Any

from functions.agentconnect.documents import Answer, ModelAnswer, Question
from functions.agentconnect.selection import options
from shared.answers import parse_strictly
from shared.gemini import model_schema
from shared.validation import Schema, issues_for, load_schema


def answer_schema(question: Question) -> Schema:
    schema = model_schema(load_schema("agentconnect/model_answer"))
    if question["type"] == "boolean":
        schema["properties"]["value"] = {"type": "boolean"}
    else:
        schema["properties"]["value"] = {"type": "string", "enum": options(question)}
    return schema


def checked_answer(question: Question, data: Any) -> Answer | None:
    """The answer when it is one of the question's options, else None. Never coerced:
    it must pass the published schema, then parse strictly into `ModelAnswer`."""
    if issues_for("agentconnect/model_answer", data):
        return None
    answer = parse_strictly(ModelAnswer, data)
    value = answer["value"]
    if question["type"] == "boolean" and not isinstance(value, bool):
        return None
    if question["type"] == "choice" and value not in options(question):
        return None
    return {"type": question["type"], "value": value, "probability": float(answer["probability"])}
