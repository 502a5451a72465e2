"""The one list of entry points, read by `main.py`, the local host, OpenAPI and deploy.

The list is data (`registry.json`, next to this module), turned here into typed entries:
this module imports nothing from the APIs, so reading it costs next to nothing at cold
start. It is the one wiring: each operation names there its domain function, what else
admits it (a session's own token) and, when it is an MCP tool, what a model reads of it;
`functions.endpoints` imports them by name. Adding an endpoint is an entry there and a
module under `functions/<api>/entry/`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal


@dataclass(frozen=True)
class Access:
    """Who may call an API's entry points: a token's capability, in one kind of tenant;
    all None for an operation about the token itself, which any person's token may call."""

    capability: str | None
    tenant_kind: str | None
    tenant_param: str | None
    """Where the request names its tenant: a path parameter or a body field."""


@dataclass(frozen=True)
class McpTool:
    """An operation that is also an MCP tool: what a model reads to decide when to call it."""

    name: str
    description: str
    read_only: bool
    listed_as: str | None = None
    """For a bare-array response: the property that holds the array in the tool's output."""


@dataclass(frozen=True)
class Operation:
    """One method served at an HTTP entry point's route, with its published schemas, the
    least tenant role that may call it and the domain function that answers it."""

    method: str
    handler: str | None = None
    """The domain function, `module:function`; None for a sweep or the MCP server, whose
    entry module serves it."""
    summary: str = ""
    """Set to the entry's summary when the registry declares none."""
    request_schema: str | None = None
    params_schema: str | None = None
    """Path and query parameters, as one object."""
    response_schema: str | None = None
    success_status: int = 200
    role: str = "viewer"
    """The least role in the tenant that may call it."""
    errors: tuple[int, ...] = ()
    """Error statuses it may answer beyond those every operation may (see `error_statuses`)."""
    audience: str | None = None
    """Set when it also admits the `session_audience` token of the session the call is
    about: the authorizer, `module:function`, that holds such a token to that session (in
    place of `shared.http.default_authorizer`)."""
    headers: tuple[str, ...] = ()
    """Request headers it reads beyond `x-request-id` (`Idempotency-Key`)."""
    page_header: str | None = None
    """The response header that carries the next page's token, for a paged list."""
    mcp: McpTool | None = None
    """Set when the MCP server serves it as a tool."""
    codec: str | None = None
    """Set when its body and answers are not JSON: the `shared.http.Codec`, `module:name`."""
    error_schema: str = "error"
    """What its error bodies are (a codec's protocol may fix its own)."""


@dataclass(frozen=True, kw_only=True)
class _Entry:
    name: str
    """The function name: the attribute of `main` and the deployed function's name."""
    module: str
    summary: str
    tag: str


@dataclass(frozen=True, kw_only=True)
class _HttpEntry(_Entry):
    kind: ClassVar[Literal["http"]] = "http"
    route: str
    """Path pattern, with `{param}` placeholders."""
    operations: tuple[Operation, ...]

    def operation(self, method: str) -> Operation:
        return next(op for op in self.operations if op.method == method)


@dataclass(frozen=True, kw_only=True)
class RestEntry(_HttpEntry):
    """A public operation of one API's REST surface, in the OpenAPI document."""

    access: Access
    """Who may call it."""


@dataclass(frozen=True, kw_only=True)
class SweepEntry(_HttpEntry):
    """A private HTTP function that Cloud Scheduler calls."""

    schedule: str
    """Its cron schedule."""


@dataclass(frozen=True, kw_only=True)
class McpEntry(_HttpEntry):
    """The MCP server: public like the REST operations, but its tools are listed over MCP
    itself (not in the OpenAPI document) and each checks its own operation's access."""


@dataclass(frozen=True, kw_only=True)
class TriggerEntry(_Entry):
    """A function run by the creation of a document matching `document`."""

    kind: ClassVar[Literal["trigger"]] = "trigger"
    document: str
    calls_gemini: bool = False


HttpEntry = RestEntry | SweepEntry | McpEntry
Entry = HttpEntry | TriggerEntry


SWEEP_SCHEDULE = "* * * * *"
REGISTRY_FILE = Path(__file__).with_name("registry.json")


def _in_api(api: str, reference: str | None) -> str | None:
    """A `module:function` declared under an API's package, named from the top."""
    return f"functions.{api}.{reference}" if reference else None


def _operation(declared: dict[str, Any], entry_summary: str, api: str) -> Operation:
    """A REST operation as declared: its handler (and authorizer) under `functions.<api>`."""
    mcp = declared.get("mcp")
    return Operation(
        **{
            **declared,
            "summary": declared.get("summary") or entry_summary,
            "handler": _in_api(api, declared["handler"]),
            "audience": _in_api(api, declared.get("audience")),
            "codec": _in_api(api, declared.get("codec")),
            "errors": tuple(declared.get("errors", ())),
            "headers": tuple(declared.get("headers", ())),
            "mcp": McpTool(**mcp) if mcp else None,
        }
    )


def _entry(declared: dict[str, Any], access: dict[str, Access]) -> Entry:
    """An entry as declared: its code is `functions/<api>/entry/<rest of its name>.py`."""
    declared = dict(declared)
    name = declared.pop("name")
    api, module = name.split("_", 1)
    where = {"name": name, "module": f"functions.{api}.entry.{module}", "tag": api}
    if "sweep" in declared:
        return SweepEntry(
            **where,
            summary=declared.pop("sweep"),
            route=f"/internal/{api}/sweep",
            operations=(Operation("POST"),),
            schedule=SWEEP_SCHEDULE,
            **declared,
        )
    if "mcp" in declared:
        return McpEntry(
            **where,
            summary=declared.pop("mcp"),
            operations=(Operation("POST"), Operation("GET"), Operation("DELETE")),
            **declared,
        )
    if "document" in declared:
        return TriggerEntry(**where, **declared)
    operations = tuple(
        _operation(op, declared["summary"], api) for op in declared.pop("operations")
    )
    return RestEntry(**where, access=access[api], operations=operations, **declared)


def _load() -> tuple[Entry, ...]:
    declared = json.loads(REGISTRY_FILE.read_text(encoding="utf-8"))
    access = {api: Access(**fields) for api, fields in declared["access"].items()}
    return tuple(_entry(entry, access) for entry in declared["entries"])


ENTRIES = _load()
BY_NAME = {entry.name: entry for entry in ENTRIES}


def http_entries() -> tuple[HttpEntry, ...]:
    return tuple(entry for entry in ENTRIES if not isinstance(entry, TriggerEntry))


def public_entries() -> tuple[RestEntry | McpEntry, ...]:
    """Every HTTP entry point a client calls (the REST ones and the MCP server)."""
    return tuple(entry for entry in ENTRIES if isinstance(entry, RestEntry | McpEntry))


def rest_entries() -> tuple[RestEntry, ...]:
    """The public REST entry points: every one the OpenAPI document holds."""
    return tuple(entry for entry in ENTRIES if isinstance(entry, RestEntry))


def public_operations() -> tuple[tuple[RestEntry, Operation], ...]:
    """Every public REST operation with its entry: what OpenAPI documents, MCP serves as
    tools and the hosting routes."""
    return tuple((entry, operation) for entry in rest_entries() for operation in entry.operations)


def mcp_tools() -> tuple[tuple[RestEntry, Operation, McpTool], ...]:
    """Every operation the MCP server serves as a tool, with its entry and the tool."""
    return tuple(
        (entry, operation, operation.mcp)
        for entry, operation in public_operations()
        if operation.mcp is not None
    )


def trigger_entries() -> tuple[TriggerEntry, ...]:
    return tuple(entry for entry in ENTRIES if isinstance(entry, TriggerEntry))


def trigger_document(name: str) -> str:
    """The document pattern whose creation runs the trigger `name`."""
    entry = BY_NAME[name]
    if not isinstance(entry, TriggerEntry):
        raise TypeError(f"{name} is not a trigger")
    return entry.document


def rest_entry(name: str) -> RestEntry:
    """The public REST entry `name`."""
    entry = BY_NAME[name]
    if not isinstance(entry, RestEntry):
        raise TypeError(f"{name} is not a public REST entry point")
    return entry


def scheduled_entries() -> tuple[SweepEntry, ...]:
    return tuple(entry for entry in ENTRIES if isinstance(entry, SweepEntry))


COMMON_ERRORS = (400, 401, 403, 404, 405, 500, 503)
BODY_ERRORS = (413, 415)


def error_statuses(operation: Operation) -> tuple[int, ...]:
    """Every error status an operation may answer: validation, auth, an unknown resource,
    a wrong method, a fault, Firestore unavailable; too large or wrong content type when
    it takes a body; and its own (409 conflicts, 429 limits)."""
    body = BODY_ERRORS if operation.request_schema or operation.codec else ()
    return tuple(sorted({*COMMON_ERRORS, *body, *operation.errors}))
