"""Requests and model answers are validated against the published schemas with references
to other schema files inlined; the verdicts are the referencing schemas' own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from benchmarks.seeding import event_batch
from cli.gemini_stand_in import cited_research_answer
from shared.validation import (
    FORMATS,
    SCHEMA_REGISTRY,
    SCHEMAS_DIR,
    inlined,
    issues_for,
    load_schema,
    validator,
)

pytestmark = pytest.mark.pure

REFERENCING = sorted(
    str(path.relative_to(SCHEMAS_DIR)).removesuffix(".json")
    for path in SCHEMAS_DIR.glob("*/*.json")
    if '"$ref": "' in path.read_text()
)
EVENTS = {"events": event_batch(datetime(2026, 11, 2, tzinfo=UTC), 0, 3)}
BROKEN_EVENTS = {"events": [{**EVENTS["events"][0], "at": "nope", "extra": 1}, {"id": "x"}]}
ANSWER = cited_research_answer([("3f2b7c1e-8a4d-4e6f-9b0a-1c2d3e4f5a6b", 1)])
INSTANCES: list[Any] = [
    EVENTS,
    BROKEN_EVENTS,
    ANSWER,
    {**ANSWER, "answer": {**ANSWER["answer"], "evidence": []}},
    {},
    [],
    None,
]


def _verdict(validator: Draft202012Validator, instance: Any) -> list[tuple[str, str]]:
    return sorted(
        (json.dumps(list(error.absolute_path)), error.message)
        for error in validator.iter_errors(instance)
    )


def test_some_published_schemas_refer_to_others() -> None:
    assert "psychologist/events.request" in REFERENCING
    assert "research/answer" in REFERENCING


@pytest.mark.parametrize("name", REFERENCING)
def test_an_inlined_schema_refers_to_no_other_file_and_judges_as_the_original(
    name: str,
) -> None:
    original = load_schema(name)
    flat = inlined(original)
    assert '"$ref": "' not in json.dumps(flat).replace('"$ref": "#', "")
    checker = FORMATS
    referencing = Draft202012Validator(original, registry=SCHEMA_REGISTRY, format_checker=checker)
    plain = Draft202012Validator(flat, format_checker=checker)
    for instance in INSTANCES:
        assert _verdict(plain, instance) == _verdict(referencing, instance)


def test_a_batch_of_events_is_refused_item_by_item() -> None:
    paths = [issue["path"] for issue in issues_for("psychologist/events.request", BROKEN_EVENTS)]
    assert ["events", 0, "at"] in paths
    assert ["events", 0] in paths
    assert ["events", 1, "agent"] in paths


def test_requests_are_validated_against_the_inlined_schema() -> None:
    used = validator("psychologist/events.request").schema
    assert used == inlined(load_schema("psychologist/events.request"))
    assert "psychologist/event.json" not in json.dumps(used)


@pytest.mark.parametrize(
    "name",
    sorted(
        str(path.relative_to(SCHEMAS_DIR)).removesuffix(".json")
        for path in SCHEMAS_DIR.glob("**/*.json")
        if path.name != "openapi.json"
    ),
)
def test_every_published_schema_is_a_valid_json_schema(name: str) -> None:
    Draft202012Validator.check_schema(load_schema(name))


@pytest.mark.parametrize(
    ("url", "valid"),
    [
        ("https://example.com/interviews/1?x=1#t", True),
        ("mailto:ana@example.com", True),
        ("urn:isbn:0451450523", True),
        ("example.com/no-scheme", False),
        ("https://exa mple.com", False),
        ("1http://x", False),
    ],
)
def test_an_evidence_source_url_must_be_an_absolute_uri(url: str, valid: bool) -> None:
    body = {
        "workspace_id": "3f2b7c1e-8a4d-4e6f-9b0a-1c2d3e4f5a6b",
        "conversation_id": "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d",
        "items": [{"text": "t", "source": {"url": url}}],
    }
    issues = issues_for("research/evidence_upsert.request", body)
    assert (issues == []) is valid, issues
