"""The published OpenAPI document is valid and declares what the API relies on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openapi_spec_validator import validate

from shared.validation import SCHEMAS_DIR

pytestmark = pytest.mark.pure

DOCUMENT = json.loads((SCHEMAS_DIR / "openapi.json").read_text(encoding="utf-8"))


def operations() -> dict[str, dict[str, Any]]:
    return {
        spec["operationId"]: spec
        for methods in DOCUMENT["paths"].values()
        for spec in methods.values()
    }


def test_the_document_is_valid_openapi_3_1() -> None:
    validate(DOCUMENT)


def test_headers_the_api_relies_on_are_declared() -> None:
    found = operations()
    ask = found["research_ask"]
    assert "Idempotency-Key" in [p["name"] for p in ask["parameters"] if p["in"] == "header"]
    assert "Retry-After" in ask["responses"]["429"]["headers"]
    listing = found["psychologist_hypotheses_list"]["responses"]["200"]["headers"]
    assert "X-Next-Page-Token" in listing
    for spec in found.values():
        for response in spec["responses"].values():
            assert "x-request-id" in response["headers"]


def test_each_operation_declares_only_the_errors_it_can_return() -> None:
    found = operations()
    assert "429" in found["research_ask"]["responses"]
    assert "429" not in found["research_status"]["responses"]
    assert "409" not in found["research_status"]["responses"]
    assert "413" not in found["psychologist_hypotheses_list"]["responses"]
    assert "503" in found["psychologist_hypotheses_list"]["responses"]


def test_each_operation_says_who_may_call_it() -> None:
    decision = operations()["psychologist_hypothesis_decision"]
    assert decision["x-evidencia-auth"] == {
        "capability": "agent:psychologist",
        "tenant": "project",
        "role": "admin",
        "sessionToken": False,
    }
    assert operations()["agentconnect_evaluation_get"]["x-evidencia-auth"]["sessionToken"]


def test_private_routes_are_not_published() -> None:
    assert not [path for path in DOCUMENT["paths"] if path.startswith("/internal/")]


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


def test_generated_clients_can_follow_every_reference_and_find_a_server() -> None:
    """A reference names a whole component (a client generator cannot follow a pointer
    into another component's properties), and the document says where to send requests."""
    document = DOCUMENT
    components = document["components"]["schemas"]
    refs = [node["$ref"] for node in _nodes(document) if "$ref" in node]
    assert refs
    for ref in refs:
        name = ref.removeprefix("#/components/schemas/")
        assert "/" not in name, ref
        assert name in components, ref
    ask = components["research.ask.response"]["properties"]["run"]
    assert ask == {"$ref": "#/components/schemas/research.status.response.run"}
    assert document["servers"][0]["url"] == "http://127.0.0.1:8080"


def test_a_branch_that_requires_a_property_defines_it() -> None:
    for node in _nodes(DOCUMENT["components"]):
        for branch in ("then", "else"):
            part = node.get(branch)
            if isinstance(part, dict) and "required" in part:
                assert set(part["required"]) <= set(part.get("properties", {})), part
