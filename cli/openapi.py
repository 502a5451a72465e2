"""OpenAPI 3.1 for every HTTP entry point, built from the registry and `schemas/`."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from functions.registry import Entry, Operation, http_entries
from shared.validation import SCHEMAS_DIR, load_schema

TARGET = SCHEMAS_DIR / "openapi.json"
_REF = re.compile(r"^([\w/.-]+)\.json(#.*)?$")
ERRORS = {
    "400": "Invalid request (with issues)",
    "401": "Unauthenticated",
    "403": "Forbidden",
    "404": "Not found",
    "405": "Method not allowed",
    "409": "Conflict",
    "413": "Payload too large",
    "415": "Unsupported media type",
    "429": "Rate limited (see Retry-After)",
    "500": "Internal error",
}


def _component_name(schema_name: str) -> str:
    return schema_name.replace("/", ".")


def _rewrite_refs(node: Any, used: set[str]) -> Any:
    """File references (`research/x.json#/a`) become component references."""
    if isinstance(node, list):
        return [_rewrite_refs(item, used) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        match = _REF.match(value) if key == "$ref" and isinstance(value, str) else None
        if match:
            used.add(match.group(1))
            pointer = (match.group(2) or "#").removeprefix("#")
            result[key] = f"#/components/schemas/{_component_name(match.group(1))}{pointer}"
        else:
            result[key] = _rewrite_refs(value, used)
    return result


def _ref(schema_name: str, used: set[str]) -> dict[str, str]:
    used.add(schema_name)
    return {"$ref": f"#/components/schemas/{_component_name(schema_name)}"}


def _json_content(schema_name: str, used: set[str]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(schema_name, used)}}


def _parameters(entry: Entry, operation: Operation) -> list[dict[str, Any]]:
    if operation.params_schema is None:
        return []
    schema = load_schema(operation.params_schema)
    in_path = set(re.findall(r"\{(\w+)\}", entry.route or ""))
    required = set(schema.get("required", []))
    return [
        {
            "name": name,
            "in": "path" if name in in_path else "query",
            "required": name in in_path or name in required,
            "schema": sub,
        }
        for name, sub in schema.get("properties", {}).items()
    ]


def _operation_id(entry: Entry, operation: Operation) -> str:
    if len(entry.operations) == 1:
        return entry.name
    return f"{entry.name}_{operation.method.lower()}"


def _operation(entry: Entry, operation: Operation, used: set[str]) -> dict[str, Any]:
    success = str(operation.success_status)
    responses: dict[str, Any] = {success: {"description": "Success"}}
    if operation.response_schema:
        responses[success]["content"] = _json_content(operation.response_schema, used)
    for status, description in ERRORS.items():
        responses[status] = {"description": description, "content": _json_content("error", used)}
    spec: dict[str, Any] = {
        "operationId": _operation_id(entry, operation),
        "summary": operation.summary or entry.summary,
        "tags": [entry.tag],
        "security": [{"bearer": []}],
        "parameters": _parameters(entry, operation),
        "responses": responses,
    }
    if operation.request_schema:
        spec["requestBody"] = {
            "required": True,
            "content": _json_content(operation.request_schema, used),
        }
    return spec


def build() -> dict[str, Any]:
    used: set[str] = set()
    paths: dict[str, Any] = {}
    for entry in http_entries():
        assert entry.route is not None
        if entry.schedule is not None:
            continue  # private: Cloud Scheduler's jobs, never routed publicly
        for operation in entry.operations:
            paths.setdefault(entry.route, {})[operation.method.lower()] = _operation(
                entry, operation, used
            )
    components: dict[str, Any] = {}
    pending = sorted(used)
    while pending:
        name = pending.pop()
        if _component_name(name) in components:
            continue
        found: set[str] = set()
        components[_component_name(name)] = _rewrite_refs(load_schema(name), found)
        pending.extend(sorted(found - used))
        used |= found
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Evidencia",
            "version": "1",
            "description": "Research with citations, the Psychologist and AgentConnect.",
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def write(check: bool = False) -> int:
    text = render()
    if check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print("schemas/openapi.json is stale: run 'evidencia openapi'", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0
