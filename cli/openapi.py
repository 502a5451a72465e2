"""OpenAPI 3.1 for every HTTP entry point, built from the registry and `schemas/`."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from functions.registry import Operation, RestEntry, error_statuses, public_operations
from shared.validation import SCHEMAS_DIR, load_schema

TARGET = SCHEMAS_DIR / "openapi.json"
_REF = re.compile(r"^([\w/.-]+)\.json(#.*)?$")
ERRORS = {
    400: "Invalid request: `issues` names every violated rule",
    401: "No valid bearer token",
    403: "The token or its user lacks the capability, tenant or role",
    404: "No such resource in this tenant, or no such path",
    405: "This method is not served here (see Allow)",
    409: "A conflict: a concurrent change (see Retry-After), or a state that does not allow it",
    413: "The body is larger than 1 MiB",
    415: "The body is not UTF-8 application/json",
    429: "A limit is reached (see Retry-After)",
    500: "An internal error; nothing internal is echoed",
    503: "The database did not answer in time (see Retry-After)",
}
SERVERS = [
    {"url": "http://127.0.0.1:8080", "description": "The local host (`make run`)"},
    {
        "url": "https://{project}.web.app",
        "description": "Deployed: Firebase Hosting routes every operation to its function",
        "variables": {"project": {"default": "your-project", "description": "The project"}},
    },
]
HEADERS: dict[str, dict[str, Any]] = {
    "x-request-id": {
        "description": "The caller's x-request-id when it is a sane token, else a new one",
        "schema": {"type": "string", "maxLength": 128},
    },
    "Retry-After": {"description": "Seconds to wait before retrying", "schema": {"type": "string"}},
    "Allow": {"description": "The methods served here", "schema": {"type": "string"}},
    "WWW-Authenticate": {"description": "Bearer (RFC 6750)", "schema": {"type": "string"}},
    "X-Next-Page-Token": {
        "description": "The pageToken of the next page; absent on the last page",
        "schema": {"type": "string"},
    },
}
HEADERS_BY_STATUS = {
    401: ["WWW-Authenticate"],
    405: ["Allow"],
    409: ["Retry-After"],
    429: ["Retry-After"],
    503: ["Retry-After"],
}
REQUEST_HEADERS: dict[str, dict[str, Any]] = {
    "x-request-id": {
        "in": "header",
        "name": "x-request-id",
        "required": False,
        "description": "Echoed on the response when it is 1 to 128 printable characters",
        "schema": {"type": "string"},
    },
    "Idempotency-Key": {
        "in": "header",
        "name": "Idempotency-Key",
        "required": False,
        "description": "1 to 255 printable characters: the same key and body within 24 hours "
        "answer the same run; the same key with another body is 409",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    },
}


LICENSE = {"name": "Proprietary", "identifier": "LicenseRef-Proprietary"}
"""The project grants no license to its code or API: said so, as OpenAPI's `info` asks (an
SPDX `LicenseRef-` names a license outside the SPDX list)."""


def _component_name(schema_name: str) -> str:
    return schema_name.replace("/", ".")


NOT_NAMES = frozenset({"properties", "anyOf", "oneOf", "allOf", "items", "$defs"})
"""JSON pointer segments that are keywords, left out of a shared shape's component name."""


def _shared_name(schema_name: str, pointer: str) -> str:
    """The component of a shape another schema points into: `research.status.response.run`
    for `research/status.response.json#/properties/run`."""
    parts = [p for p in pointer.strip("/").split("/") if p not in NOT_NAMES and not p.isdigit()]
    return ".".join([_component_name(schema_name), *parts])


def _rewrite_refs(node: Any, used: set[str], shared: dict[str, tuple[str, str]]) -> Any:
    """File references (`research/x.json`) become component references; a reference into
    another schema (`research/x.json#/properties/a`) becomes one to a component of that
    shape's own, recorded in `shared` (generated clients cannot follow a pointer into
    another component)."""
    if isinstance(node, list):
        return [_rewrite_refs(item, used, shared) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        match = _REF.match(value) if key == "$ref" and isinstance(value, str) else None
        if match:
            used.add(match.group(1))
            pointer = (match.group(2) or "#").removeprefix("#")
            name = _component_name(match.group(1))
            if pointer:
                name = _shared_name(match.group(1), pointer)
                shared[name] = (match.group(1), pointer)
            result[key] = f"#/components/schemas/{name}"
        else:
            result[key] = _rewrite_refs(value, used, shared)
    return result


def _branches_define_what_they_require(node: Any) -> Any:
    """A `then` or `else` that requires a property also names its schema (the parent's),
    as linters and client generators expect; validation is unchanged."""
    if isinstance(node, list):
        return [_branches_define_what_they_require(item) for item in node]
    if not isinstance(node, dict):
        return node
    result = {key: _branches_define_what_they_require(value) for key, value in node.items()}
    known = result.get("properties", {})
    for branch in ("then", "else"):
        part = result.get(branch)
        if isinstance(part, dict) and "required" in part and "properties" not in part:
            named = {name: known[name] for name in part["required"] if name in known}
            result[branch] = {**part, "properties": named}
    return result


def _hoist(components: dict[str, Any], shared: dict[str, tuple[str, str]]) -> None:
    """Give each shape another schema points into its own component, referenced from
    where it stood, so that the shape is defined once."""
    for name, (schema_name, pointer) in sorted(shared.items()):
        parent: Any = None
        node: Any = components[_component_name(schema_name)]
        segment = ""
        for segment in pointer.strip("/").split("/"):
            parent, node = node, node[int(segment) if isinstance(node, list) else segment]
        components[name] = node
        parent[int(segment) if isinstance(parent, list) else segment] = {
            "$ref": f"#/components/schemas/{name}"
        }


def _ref(schema_name: str, used: set[str]) -> dict[str, str]:
    used.add(schema_name)
    return {"$ref": f"#/components/schemas/{_component_name(schema_name)}"}


def _json_content(schema_name: str, used: set[str]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(schema_name, used)}}


def _parameters(entry: RestEntry, operation: Operation) -> list[dict[str, Any]]:
    if operation.params_schema is None:
        return []
    schema = load_schema(operation.params_schema)
    in_path = set(re.findall(r"\{(\w+)\}", entry.route))
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


def _operation_id(entry: RestEntry, operation: Operation) -> str:
    if len(entry.operations) == 1:
        return entry.name
    return f"{entry.name}_{operation.method.lower()}"


def _headers(names: list[str]) -> dict[str, Any]:
    return {name: HEADERS[name] for name in ["x-request-id", *names]}


def _responses(operation: Operation, used: set[str]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": "Success"}
    if operation.response_schema:
        success["content"] = _json_content(operation.response_schema, used)
    success["headers"] = _headers([operation.page_header] if operation.page_header else [])
    responses = {str(operation.success_status): success}
    for status in error_statuses(operation):
        responses[str(status)] = {
            "description": ERRORS[status],
            "headers": _headers(HEADERS_BY_STATUS.get(status, [])),
            "content": _json_content(operation.error_schema, used),
        }
    return responses


def _authority(entry: RestEntry, operation: Operation) -> str:
    access = entry.access
    if access.tenant_kind is None:
        return "Needs any valid token of a person; it names no tenant and needs no role."
    who = (
        f"a token with `{access.capability}` whose user holds at least the `{operation.role}` role"
    )
    if operation.audience is not None:
        who += " (or the session's own session token)"
    return f"Needs {who} in the {access.tenant_kind}."


def _operation(entry: RestEntry, operation: Operation, used: set[str]) -> dict[str, Any]:
    headers = [REQUEST_HEADERS[name] for name in ("x-request-id", *operation.headers)]
    access = entry.access
    spec: dict[str, Any] = {
        "operationId": _operation_id(entry, operation),
        "summary": operation.summary,
        "description": _authority(entry, operation),
        "tags": [entry.tag],
        "security": [{"bearer": []}],
        "x-evidencia-auth": {
            "capability": access.capability,
            "tenant": access.tenant_kind,
            "role": operation.role if access.tenant_kind else None,
            "sessionToken": operation.audience is not None,
        },
        "parameters": _parameters(entry, operation) + headers,
        "responses": _responses(operation, used),
    }
    if operation.request_schema:
        spec["requestBody"] = {
            "required": True,
            "content": _json_content(operation.request_schema, used),
        }
    if operation.codec:
        _otlp_bodies(spec)
    return spec


def _otlp_bodies(spec: dict[str, Any]) -> None:
    """An operation with a codec speaks OTLP/HTTP: protobuf or OTLP/JSON in, the same out,
    and a `google.rpc.Status` for every failure."""
    binary = {"schema": {"type": "string", "format": "binary"}}
    for response in spec["responses"].values():
        response["content"]["application/x-protobuf"] = binary
    spec["requestBody"] = {
        "required": True,
        "description": "An OTLP export request (opentelemetry-proto), optionally gzip",
        "content": {
            "application/x-protobuf": binary,
            "application/json": {"schema": {"type": "object"}},
        },
    }


def build() -> dict[str, Any]:
    used: set[str] = set()
    paths: dict[str, Any] = {}
    for entry, operation in public_operations():
        paths.setdefault(entry.route, {})[operation.method.lower()] = _operation(
            entry, operation, used
        )
    components: dict[str, Any] = {}
    shared: dict[str, tuple[str, str]] = {}
    pending = sorted(used)
    while pending:
        name = pending.pop()
        if _component_name(name) in components:
            continue
        found: set[str] = set()
        schema = _branches_define_what_they_require(load_schema(name))
        components[_component_name(name)] = _rewrite_refs(schema, found, shared)
        pending.extend(sorted(found - used))
        used |= found
    _hoist(components, shared)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Evidencia",
            "version": "1",
            "description": "Research with citations, the Psychologist and AgentConnect.",
            "license": LICENSE,
        },
        "servers": SERVERS,
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
