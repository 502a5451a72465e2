"""Property-based fuzzing of the served OpenAPI document with schemathesis.

Every operation gets generated requests, valid (positive mode) and invalid (negative
mode), sent to the local host with a token of every capability, one test per operation
on a fresh database. Bounds: at most 12 examples per operation and mode (about 400
requests in all), derandomized so every run sends the same requests, no per-example
deadline. The checks: no server error, and every response valid against the schema its
operation declares for its status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from cli.host import LocalHost
from tests.api import World

CAPABILITIES = ("agent:research", "agent:psychologist", "agent:connect")
DOCUMENT = Path(__file__).resolve().parent.parent / "schemas" / "openapi.json"
OPERATIONS = [
    (method.upper(), path)
    for path, item in json.loads(DOCUMENT.read_text())["paths"].items()
    for method in item
    if method in {"get", "put", "post", "delete", "patch"}
]
"""Each operation of the published document is fuzzed as a test of its own, so that the
suite's workers share them; the served document is checked to hold the same ones."""


@pytest.fixture(scope="module")
def served_schema(host: LocalHost) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(host.url + "/openapi.json")


@pytest.fixture
def bearer(world: World) -> dict[str, str]:
    token = world.token("fuzzer", capabilities=CAPABILITIES)[0]
    return {"Authorization": f"Bearer {token}"}


def test_every_served_operation_is_fuzzed(served_schema: schemathesis.BaseSchema) -> None:
    served = {result.ok().label for result in served_schema.get_all_operations()}  # type: ignore[union-attr]
    assert served == {f"{method} {path}" for method, path in OPERATIONS}
    assert len(served) >= 15


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_fuzzed_requests_get_no_server_error_and_match_their_declared_schema(
    served_schema: schemathesis.BaseSchema, bearer: dict[str, str], method: str, path: str
) -> None:
    operation = served_schema[path][method]
    for mode in schemathesis.GenerationMode:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=12,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(
                headers=bearer, checks=[not_a_server_error, response_schema_conformance]
            )

        check()
