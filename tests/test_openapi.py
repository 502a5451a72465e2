"""The published OpenAPI document is valid and declares what the API relies on."""

from __future__ import annotations

import json
from typing import Any

from openapi_spec_validator import validate

from shared.validation import SCHEMAS_DIR

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
