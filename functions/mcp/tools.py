"""The MCP tools: each is one operation of the HTTP API, reached through the same checks
(`shared.http.checked_call`: schemas, token, grants, role) and the same domain function,
so an agent can do through MCP exactly what its token can do over HTTP. The registry
declares which operations are tools and what a model reads of each; this module imports
no API: a tool's domain function and authorizer are imported by name on its first call,
so that a cold instance imports only the API its first call needs.

A tool's input schema joins the operation's published parameter and request schemas; its
output schema is the published response schema (a bare array is wrapped in an object,
since MCP structured content is an object)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from werkzeug.datastructures import Headers

from functions import endpoints
from functions.registry import McpTool, Operation, RestEntry, mcp_tools
from shared.http import Authorizer, Call, Endpoint, Reply
from shared.jsonbody import JsonObject
from shared.validation import Schema, inlined, load_schema


@dataclass(frozen=True)
class Tool:
    """One MCP tool: one operation of an HTTP entry point, with the name and description
    a model reads to decide when to call it, as the registry declares them."""

    entry: RestEntry
    operation: Operation
    name: str
    description: str
    read_only: bool
    listed_as: str | None

    def handler(self, call: Call) -> Reply:
        return endpoints.handler(self.operation)(call)

    @property
    def authorizer(self) -> Authorizer:
        return endpoints.authorizer(self.operation)

    @property
    def endpoint(self) -> Endpoint:
        return endpoints.endpoint(self.entry.name, self.operation.method)

    @property
    def header_arguments(self) -> dict[str, str]:
        """{argument: request header} for the headers the operation reads."""
        return {HEADER_ARGUMENTS[name]: name for name in self.operation.headers}

    def input_schema(self) -> Schema:
        """The operation's published schema itself when it has one and takes nothing
        else (the contract's status request, as is); else its parts joined."""
        parts = [p for p in (self.endpoint.params_schema, self.endpoint.body_schema) if p]
        if len(parts) == 1 and not self.operation.headers:
            return _published(parts[0])
        properties: Schema = {}
        required: list[str] = []
        for name in parts:
            schema = inlined(load_schema(name))
            properties |= schema.get("properties", {})
            required += [r for r in schema.get("required", []) if r not in required]
        for argument in self.header_arguments:
            properties[argument] = HEADER_SCHEMAS[argument]
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    def output_schema(self) -> Schema:
        name = self.operation.response_schema
        if name is None:
            raise LookupError(f"{self.name} publishes no response schema")
        schema = _published(name)
        if self.listed_as is not None:
            schema = {
                "type": "object",
                "properties": {
                    self.listed_as: schema,
                    "nextPageToken": {"type": ["string", "null"]},
                },
                "required": [self.listed_as, "nextPageToken"],
                "additionalProperties": False,
            }
        portable: Schema = _without_type_arrays(schema)
        return portable

    def split(self, arguments: JsonObject) -> tuple[JsonObject, JsonObject, Headers]:
        """(body, params, headers) from a call's arguments, as the HTTP request carries them."""
        params_schema = self.endpoint.params_schema
        in_params = (
            set(load_schema(params_schema).get("properties", {})) if params_schema else set()
        )
        headers = Headers()
        body: JsonObject = {}
        params: JsonObject = {}
        from_headers = self.header_arguments
        for key, value in arguments.items():
            if key in from_headers:
                headers[from_headers[key]] = str(value)
            elif key in in_params:
                params[key] = value
            else:
                body[key] = value
        return body, params, headers


SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
"""Keywords whose value maps names (not keywords) to schemas."""
DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose value is data, never a schema."""


def _without_type_arrays(schema: Any) -> Any:
    """The same schema with every `"type": [a, b]` as `anyOf` of one type each, the form
    strict MCP clients read. Each branch keeps the schema's other keywords: those that
    apply to one type ignore the others, the rest hold in both, so nothing changes."""
    if isinstance(schema, list):
        return [_without_type_arrays(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rest: dict[str, Any] = {}
    for key, value in schema.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            rest[key] = {name: _without_type_arrays(sub) for name, sub in value.items()}
        elif key in DATA:
            rest[key] = value
        elif key != "type":
            rest[key] = _without_type_arrays(value)
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return {"anyOf": [{"type": kind, **rest} for kind in kinds]}
    return {**rest, "type": kinds} if "type" in schema else rest


def _published(name: str) -> Schema:
    """A published schema with its references inlined, as a tool's schema."""
    return {key: value for key, value in inlined(load_schema(name)).items() if key != "$schema"}


HEADER_ARGUMENTS = {"Idempotency-Key": "idempotencyKey"}
"""The tool argument that carries each request header an operation reads."""
HEADER_SCHEMAS: dict[str, Schema] = {
    "idempotencyKey": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "description": "Sent again with the same request, it returns the run the first call "
        "made instead of asking again: use one key per question.",
    }
}


def _tool(entry: RestEntry, operation: Operation, declared: McpTool) -> Tool:
    return Tool(
        entry,
        operation,
        declared.name,
        declared.description,
        declared.read_only,
        declared.listed_as,
    )


TOOLS = tuple(_tool(entry, operation, declared) for entry, operation, declared in mcp_tools())
BY_TOOL = {tool.name: tool for tool in TOOLS}
