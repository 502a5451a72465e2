"""JSON Schema validation against the published schemas in `schemas/`.

Each schema file is read and compiled once per instance. Every violated rule becomes one
entry of `issues`, shaped like a ZodError's issues: `{path, message, code}`.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from shared.errors import ApiError, ErrorCode, Issue

Schema = dict[str, Any]
"""A JSON Schema document: its shape is JSON Schema's own, not one of ours."""

SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "schemas"

_CODE_BY_KEYWORD = {
    "type": "invalid_type",
    "required": "invalid_type",
    "additionalProperties": "unrecognized_keys",
    "enum": "invalid_enum_value",
    "const": "invalid_literal",
    "minLength": "too_small",
    "minItems": "too_small",
    "minimum": "too_small",
    "exclusiveMinimum": "too_small",
    "minProperties": "too_small",
    "maxLength": "too_big",
    "maxItems": "too_big",
    "maximum": "too_big",
    "exclusiveMaximum": "too_big",
    "maxProperties": "too_big",
    "pattern": "invalid_string",
    "format": "invalid_string",
}


@cache
def load_schema(name: str) -> Schema:
    """The schema `schemas/<name>.json` as a dict, e.g. `research/status.request`."""
    with (SCHEMAS_DIR / f"{name}.json").open(encoding="utf-8") as handle:
        schema: Schema = json.load(handle)
    return schema


def _retrieve(uri: str) -> Resource[Any]:
    """Resolve `$ref`s such as `research/status.response.json#/...` from `schemas/`."""
    return Resource.from_contents(load_schema(uri.removesuffix(".json")), DRAFT202012)


SCHEMA_REGISTRY: Registry[Any] = Registry(retrieve=_retrieve)  # type: ignore[call-arg]


def _target(ref: str) -> Any:
    """What a reference to another schema file (`file.json#/json/pointer`) points at."""
    file, _, pointer = ref.partition("#")
    found: Any = load_schema(file.removesuffix(".json"))
    for part in pointer.split("/")[1:]:
        found = found[int(part)] if isinstance(found, list) else found[part]
    return found


def inlined(node: Any, trail: tuple[str, ...] = ()) -> Any:
    """`node` with every reference to another schema file replaced by what it points at.

    Validating against the inlined schema gives the same result, and is about twice as
    fast on a batch (a reference is otherwise resolved again for every item it checks)."""
    if isinstance(node, list):
        return [inlined(item, trail) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if not isinstance(ref, str) or ref.startswith("#") or ref in trail:
        return {key: inlined(value, trail) for key, value in node.items()}
    target = inlined(_target(ref), (*trail, ref))
    target = {key: value for key, value in target.items() if key not in ("$schema", "$id")}
    rest = {key: inlined(value, trail) for key, value in node.items() if key != "$ref"}
    return {"allOf": [target, rest]} if rest else target


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`\x00-\x1f\x7f]*$")


def _is_uri(instance: object) -> bool:
    """RFC 3986's shape of an absolute URI: a scheme, then characters a URI may hold.

    Checked here rather than by `rfc3986-validator`, whose import alone cost every cold
    start 5 ms for the one field (an evidence source's `url`) that has this format."""
    return not isinstance(instance, str) or bool(_URI.match(instance))


FORMATS = FormatChecker(formats=Draft202012Validator.FORMAT_CHECKER.checkers)
FORMATS.checks("uri")(_is_uri)
"""JSON Schema's format checks as jsonschema has them, with our own for `uri`."""


@cache
def validator(name: str) -> Draft202012Validator:
    """A validator for `schemas/<name>.json`. The schemas themselves are checked against
    the JSON Schema metaschema by the tests, not again on every cold start."""
    schema = load_schema(name)
    return Draft202012Validator(
        inlined(schema),
        registry=SCHEMA_REGISTRY,
        format_checker=FORMATS,
    )


def _issue(error: ValidationError) -> Issue:
    path: list[str | int] = list(error.absolute_path)
    if error.validator == "required":
        missing = next(
            (name for name in error.validator_value if error.message.startswith(repr(name))),
            None,
        )
        if missing is not None:
            path.append(missing)
    return {
        "path": path,
        "message": error.message,
        "code": _CODE_BY_KEYWORD.get(str(error.validator), "custom"),
    }


def issues_for(name: str, instance: Any) -> list[Issue]:
    errors = sorted(validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [_issue(error) for error in errors]


def validate(name: str, instance: Any, what: str = "request") -> None:
    """Raise `invalid_request` with every violated rule when `instance` breaks the schema.
    A valid instance, the common case, is judged once without collecting errors."""
    if validator(name).is_valid(instance):
        return
    issues = issues_for(name, instance)
    if issues:
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            f"The {what} does not match its schema ({len(issues)} issue(s)).",
            issues=issues,
        )
