"""Property-based fuzzing of the served OpenAPI document with schemathesis.

Every operation gets generated requests, valid (positive mode) and invalid (negative
mode), sent to the local host with a token of every capability. Bounds: at most 12
examples per operation and mode (about 400 requests in all), derandomized so every run
sends the same requests, no per-example deadline. The checks:
no server error, and every response valid against the schema its operation declares for
its status."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from cli.host import LocalHost
from tests.api import World

CAPABILITIES = ("agent:research", "agent:psychologist", "agent:connect")


@pytest.fixture
def served_schema(host: LocalHost) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(host.url + "/openapi.json")


@pytest.fixture
def bearer(world: World) -> dict[str, str]:
    token = world.token("fuzzer", capabilities=CAPABILITIES)[0]
    return {"Authorization": f"Bearer {token}"}


def test_fuzzed_requests_get_no_server_error_and_match_their_declared_schema(
    served_schema: schemathesis.BaseSchema, bearer: dict[str, str]
) -> None:
    operations = [result.ok() for result in served_schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 15

    for operation, mode in itertools.product(operations, schemathesis.GenerationMode):

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
