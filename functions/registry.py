"""The one list of entry points, read by `main.py`, the local host, OpenAPI and deploy.

The list is data (`registry.json`, next to this module), turned here into typed entries:
this module imports nothing from the APIs, so reading it costs next to nothing at cold
start. Adding an endpoint is an entry there and a module under `functions/<api>/entry/`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class Access:
    """Who may call an API's entry points: a token's capability, in one kind of tenant."""

    capability: str
    tenant_kind: str
    tenant_param: str
    """Where the request names its tenant: a path parameter or a body field."""


@dataclass(frozen=True)
class Operation:
    """One method served at an HTTP entry point's route, with its published schemas and
    the least tenant role that may call it."""

    method: str
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
    audience: bool = False
    """Also admits the `session_audience` token of the session the call is about."""


@dataclass(frozen=True)
class Entry:
    name: str
    """The function name: the attribute of `main` and the deployed function's name."""
    kind: Literal["http", "trigger"]
    module: str
    summary: str
    tag: str
    route: str | None = None
    """Public path pattern of an HTTP entry point, with `{param}` placeholders."""
    operations: tuple[Operation, ...] = ()
    document: str | None = None
    """Document path pattern whose creation runs a trigger."""
    calls_gemini: bool = False
    schedule: str | None = None
    """Cron schedule for an HTTP entry point that Cloud Scheduler calls."""
    access: Access | None = None
    """Who may call it; None for private entries (triggers, scheduled jobs) and for the MCP
    server, whose tools each check their own operation's access."""
    protocol: Literal["rest", "mcp"] = "rest"
    """An MCP server is public like the REST operations but not part of the OpenAPI
    document: its tools are listed over MCP itself."""

    def operation(self, method: str) -> Operation:
        return next(op for op in self.operations if op.method == method)


SWEEP_SCHEDULE = "* * * * *"
REGISTRY_FILE = Path(__file__).with_name("registry.json")


def _operation(declared: dict[str, Any], entry_summary: str) -> Operation:
    return Operation(
        **{
            **declared,
            "summary": declared.get("summary") or entry_summary,
            "errors": tuple(declared.get("errors", ())),
        }
    )


def _entry(declared: dict[str, Any], access: dict[str, Access]) -> Entry:
    """An entry as declared: its code is `functions/<api>/entry/<rest of its name>.py`."""
    declared = dict(declared)
    name = declared.pop("name")
    api, module = name.split("_", 1)
    where = {"name": name, "module": f"functions.{api}.entry.{module}", "tag": api}
    if "sweep" in declared:
        return Entry(
            **where,
            kind="http",
            summary=declared.pop("sweep"),
            route=f"/internal/{api}/sweep",
            operations=(Operation("POST"),),
            schedule=SWEEP_SCHEDULE,
            **declared,
        )
    if "mcp" in declared:
        return Entry(
            **where,
            kind="http",
            summary=declared.pop("mcp"),
            operations=(Operation("POST"), Operation("GET"), Operation("DELETE")),
            protocol="mcp",
            **declared,
        )
    if "document" in declared:
        return Entry(**where, kind="trigger", **declared)
    operations = tuple(_operation(op, declared["summary"]) for op in declared.pop("operations"))
    return Entry(**where, kind="http", access=access[api], operations=operations, **declared)


def _load() -> tuple[Entry, ...]:
    declared = json.loads(REGISTRY_FILE.read_text(encoding="utf-8"))
    access = {api: Access(**fields) for api, fields in declared["access"].items()}
    return tuple(_entry(entry, access) for entry in declared["entries"])


ENTRIES = _load()
BY_NAME = {entry.name: entry for entry in ENTRIES}


def http_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.kind == "http")


def api_entries() -> tuple[Entry, ...]:
    """The REST entry points: HTTP, not the MCP server."""
    return tuple(entry for entry in http_entries() if entry.protocol == "rest")


def trigger_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.kind == "trigger")


def trigger_document(name: str) -> str:
    """The document pattern whose creation runs the trigger `name`."""
    document = BY_NAME[name].document
    if document is None:
        raise LookupError(f"{name} is not a trigger")
    return document


def scheduled_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.schedule is not None)


COMMON_ERRORS = (400, 401, 403, 404, 405, 500, 503)
BODY_ERRORS = (413, 415)


def error_statuses(operation: Operation) -> tuple[int, ...]:
    """Every error status an operation may answer: validation, auth, an unknown resource,
    a wrong method, a fault, Firestore unavailable; too large or wrong content type when
    it takes a body; and its own (409 conflicts, 429 limits)."""
    body = BODY_ERRORS if operation.request_schema else ()
    return tuple(sorted({*COMMON_ERRORS, *body, *operation.errors}))
