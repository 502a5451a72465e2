"""Every request and params schema an operation names has a TypedDict in its API's
`requests.py` that says what the schema says: the same properties, the same ones
required, and for each a Python type of its JSON type, nested objects and array items
too. `Call.body_as` and `Call.params_as` cast a validated body to it; this makes the cast
true."""

from __future__ import annotations

import importlib
from enum import StrEnum
from typing import Any, Literal, get_args, get_origin

import pytest
from typing_extensions import TypedDict, get_type_hints, is_typeddict

from functions.registry import public_operations
from shared.validation import Schema, inlined, load_schema

pytestmark = pytest.mark.pure

SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool}


def named_schemas() -> dict[str, str]:
    """Every request and params schema an operation names, with the API that names it."""
    return {
        schema: entry.tag
        for entry, operation in public_operations()
        for schema in (operation.request_schema, operation.params_schema)
        if schema is not None
    }


def typed_requests(api: str) -> dict[str, type]:
    table: dict[str, type] = importlib.import_module(f"functions.{api}.requests").REQUESTS
    return table


def enum_values(kind: Any) -> set[object] | None:
    """The values a Literal or a StrEnum admits; None for any other type."""
    if get_origin(kind) is Literal:
        return {arg.value if isinstance(arg, StrEnum) else arg for arg in get_args(kind)}
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return {member.value for member in kind}
    return None


def mismatches(kind: Any, schema: Schema, path: str = "$") -> list[str]:
    """Where the type `kind` says other than `schema`, and what."""
    json_type = schema.get("type", "")
    if json_type == "object":
        return object_mismatches(kind, schema, path)
    if json_type == "array":
        if get_origin(kind) is not list:
            return [f"{path}: an array, typed {kind}"]
        return mismatches(get_args(kind)[0], schema["items"], f"{path}[]")
    if "enum" in schema:
        same = enum_values(kind) == set(schema["enum"])
        return [] if same else [f"{path}: one of {schema['enum']}, typed {kind}"]
    return [] if kind is SCALARS.get(json_type) else [f"{path}: a JSON {json_type}, typed {kind}"]


def object_mismatches(kind: Any, schema: Schema, path: str) -> list[str]:
    if is_typeddict(kind):
        return typeddict_mismatches(kind, schema, path)
    if get_origin(kind) is not dict or "properties" in schema:
        return [f"{path}: an object, typed {kind}"]
    values = schema.get("additionalProperties")
    return mismatches(get_args(kind)[1], values, f"{path}.*") if isinstance(values, dict) else []


def typeddict_mismatches(kind: Any, schema: Schema, path: str) -> list[str]:
    properties: Schema = schema.get("properties", {})
    required = set(schema.get("required", []))
    hints = get_type_hints(kind)
    found = []
    if set(hints) != set(properties):
        found.append(f"{path}: properties {sorted(properties)}, typed {sorted(hints)}")
    if kind.__required_keys__ != required:
        found.append(f"{path}: required {sorted(required)}, typed {sorted(kind.__required_keys__)}")
    optional = set(properties) - required
    if kind.__optional_keys__ != optional:
        found.append(f"{path}: optional {sorted(optional)}, typed {sorted(kind.__optional_keys__)}")
    for name in sorted(set(hints) & set(properties)):
        found += mismatches(hints[name], properties[name], f"{path}.{name}")
    return found


NAMED = named_schemas()


@pytest.mark.parametrize(("schema_name", "owner"), NAMED.items(), ids=list(NAMED))
def test_every_schema_an_operation_names_has_a_typed_request(schema_name: str, owner: str) -> None:
    assert schema_name in typed_requests(owner), f"no TypedDict in functions/{owner}/requests.py"


@pytest.mark.parametrize(("schema_name", "owner"), NAMED.items(), ids=list(NAMED))
def test_each_typed_request_says_what_its_schema_says(schema_name: str, owner: str) -> None:
    kind = typed_requests(owner)[schema_name]
    assert mismatches(kind, inlined(load_schema(schema_name))) == []


@pytest.mark.parametrize("owner", sorted(set(NAMED.values())))
def test_no_typed_request_stands_for_a_schema_no_operation_names(owner: str) -> None:
    assert set(typed_requests(owner)) <= set(NAMED)


class Drifted(TypedDict):
    """`research/status.request` with its `run_id` gone and `workspace_id` an int."""

    workspace_id: int
    conversation_id: str


def test_the_comparison_sees_a_missing_property_and_a_wrong_type() -> None:
    assert mismatches(Drifted, load_schema("research/status.request")) == [
        "$: properties ['conversation_id', 'run_id', 'workspace_id'], "
        "typed ['conversation_id', 'workspace_id']",
        "$: required ['conversation_id', 'run_id', 'workspace_id'], "
        "typed ['conversation_id', 'workspace_id']",
        "$.workspace_id: a JSON string, typed <class 'int'>",
    ]
