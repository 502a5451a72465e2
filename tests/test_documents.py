"""The typed shapes in each API's `documents.py` name exactly the fields of the published
schemas they stand for, so that code, OpenAPI and the model's answers cannot drift apart;
the workers parse Gemini's answers into them with pydantic, strictly."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from cli.gemini_stand_in import cited_research_answer
from functions.agentconnect import documents as connect
from functions.agentconnect.checks import checked_answer
from functions.psychologist import documents as psychologist
from functions.psychologist.worker import parse_output
from functions.research import documents as research
from functions.research.checks import contract_answer_schema, parse_answer
from shared.validation import Schema, load_schema

pytestmark = pytest.mark.pure

Shape = dict[str, Any]
"""Property names and required names, nested: what two schemas must agree on."""


def _resolve(schema: Schema, root: Schema) -> Schema:
    while "$ref" in schema and schema["$ref"].startswith("#/"):
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target[part]
        schema = target
    return schema


def _object_of(schema: Schema, root: Schema) -> Schema | None:
    """The object a schema describes, through `$ref`, nullable `anyOf` and arrays."""
    schema = _resolve(schema, root)
    for member in schema.get("anyOf", []):
        found = _object_of(member, root)
        if found is not None:
            return found
    if schema.get("type") == "array" and "items" in schema:
        return _object_of(schema["items"], root)
    return schema if "properties" in schema else None


def shape(schema: Schema, root: Schema | None = None) -> Shape:
    root = root if root is not None else schema
    described = _object_of(schema, root)
    if described is None:
        return {}
    nested = {}
    for name, sub in described["properties"].items():
        inner = shape(sub, root)
        if inner:
            nested[name] = inner
    return {
        "properties": sorted(described["properties"]),
        "required": sorted(described.get("required", [])),
        "nested": nested,
    }


def typed_shape(kind: Any) -> Shape:
    return shape(TypeAdapter(kind).json_schema())


SHAPES = [
    pytest.param(research.Answer, contract_answer_schema(), id="research answer"),
    pytest.param(research.StatusView, load_schema("research/status.response"), id="status"),
    pytest.param(
        research.ConversationView, load_schema("research/conversation"), id="conversation"
    ),
    pytest.param(
        psychologist.ModelOutput,
        load_schema("psychologist/model_output"),
        id="psychologist model output",
    ),
    pytest.param(psychologist.Event, load_schema("psychologist/event"), id="event"),
    pytest.param(
        psychologist.HypothesisView, load_schema("psychologist/hypothesis"), id="hypothesis"
    ),
    pytest.param(psychologist.SessionView, load_schema("psychologist/session"), id="session"),
    pytest.param(psychologist.AnalysisView, load_schema("psychologist/analysis"), id="analysis"),
    pytest.param(
        psychologist.SessionRow,
        load_schema("psychologist/sessions.response")["items"],
        id="sessions row",
    ),
    pytest.param(connect.ModelAnswer, load_schema("agentconnect/model_answer"), id="model answer"),
    pytest.param(connect.Selection, load_schema("agentconnect/selection.request"), id="selection"),
    pytest.param(connect.EvaluationView, load_schema("agentconnect/evaluation"), id="evaluation"),
    pytest.param(
        connect.OutcomeSourceView, load_schema("agentconnect/outcome_source"), id="outcome source"
    ),
    pytest.param(
        research.StatementCitations,
        load_schema("research/citations.response")["properties"]["statements"],
        id="citations of a statement",
    ),
]
EXTENSIONS: dict[tuple[str, ...], set[str]] = {("fullAnswer",): {"probabilitySource"}}
"""Fields the code adds where the published object admits more than it names: the
evaluation's `fullAnswer` says where its probability came from (logprobs or the model)."""


def _without_extensions(typed: Shape, published: Schema, path: tuple[str, ...] = ()) -> Shape:
    extra = EXTENSIONS.get(path, set())
    if extra:
        assert _object_of(published, published) is not None
        assert published.get("additionalProperties", True) is not False, path
    return {
        "properties": [p for p in typed.get("properties", []) if p not in extra],
        "required": [r for r in typed.get("required", []) if r not in extra],
        "nested": {
            name: _without_extensions(inner, _field(published, name), (*path, name))
            for name, inner in typed.get("nested", {}).items()
        },
    }


def _field(published: Schema, name: str) -> Schema:
    described = _object_of(published, published) or {}
    found: Schema = _object_of(described.get("properties", {}).get(name, {}), published) or {}
    return found


@pytest.mark.parametrize(("kind", "published"), SHAPES)
def test_each_typed_shape_names_exactly_its_published_schemas_fields(
    kind: Any, published: Schema
) -> None:
    assert _without_extensions(typed_shape(kind), published) == shape(published)


def test_the_shape_comparison_sees_a_missing_field_and_a_changed_requirement() -> None:
    published = contract_answer_schema()
    assert shape(published) != shape(
        {**published, "required": [r for r in published["required"] if r != "limitations"]}
    )
    dropped = {k: v for k, v in published["properties"].items() if k != "method_version"}
    assert shape(published) != shape({**published, "properties": dropped})


def test_a_research_answer_is_parsed_strictly_into_its_typed_shape() -> None:
    answer = cited_research_answer([("3f2b7c1e-8a4d-4e6f-9b0a-1c2d3e4f5a6b", 2)])
    assert parse_answer(answer) == answer
    with pytest.raises(ValidationError):
        parse_answer({**answer, "quantitative_claims": "false"})


def test_psychologist_output_is_parsed_strictly_into_its_typed_shape() -> None:
    finding = {
        "agenteAlvo": "dev-api",
        "observacao": "o",
        "hipotese": "h",
        "sugestao": "s",
        "confiancaPercent": 70,
        "evidenceEventIds": ["01JC4Z8QK3M7YV2N5T9B0PXHRA"],
        "terminationAnalysis": None,
    }
    assert parse_output({"hypotheses": [finding]})["hypotheses"] == [finding]
    with pytest.raises(ValidationError):
        parse_output(
            {"hypotheses": [{**finding, "evidenceEventIds": "01JC4Z8QK3M7YV2N5T9B0PXHRA"}]}
        )


def test_a_model_answer_outside_the_question_or_its_schema_is_refused() -> None:
    question: connect.Question = {"type": "boolean", "instructions": "Deep reasoning?"}
    assert checked_answer(question, {"value": True, "probability": 0.9}) == {
        "type": "boolean",
        "value": True,
        "probability": 0.9,
    }
    assert checked_answer(question, {"value": "yes", "probability": 0.9}) is None
    assert checked_answer(question, {"value": True, "probability": "0.9"}) is None
