"""An entry point's boundary settings and what serves it, read from its registry entry:
schemas, route, who may call it, and the domain function and authorizer the registry
names, imported here by name (so neither the registry nor the MCP server imports an API)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

from functions.registry import Operation, rest_entry
from shared.auth import SESSION_AUDIENCE_CLASSES, USER_CLASSES
from shared.http import Authorizer, Call, Codec, Endpoint, Reply, Route, default_authorizer

Handler = Callable[[Call], Reply]


def endpoint(name: str, method: str | None = None) -> Endpoint:
    entry = rest_entry(name)
    operation = entry.operation(method) if method else entry.operations[0]
    access = entry.access
    return Endpoint(
        method=operation.method,
        capability=access.capability,
        role=operation.role,
        tenant_kind=access.tenant_kind,
        tenant_param=access.tenant_param,
        body_schema=operation.request_schema,
        params_schema=operation.params_schema,
        route=entry.route,
        classes=USER_CLASSES if operation.audience is None else SESSION_AUDIENCE_CLASSES,
    )


@cache
def _imported(reference: str | None) -> Any:
    """The function a registry reference (`module:function`) names, its module imported."""
    if reference is None:
        raise LookupError("The registry names no function here.")
    module, name = reference.split(":")
    return getattr(importlib.import_module(module), name)


def handler(operation: Operation) -> Handler:
    """The domain function that answers the operation."""
    function: Handler = _imported(operation.handler)
    return function


def authorizer(operation: Operation) -> Authorizer:
    """The operation's own authorizer when it admits session tokens, else the default."""
    if operation.audience is None:
        return default_authorizer
    function: Authorizer = _imported(operation.audience)
    return function


def codec(operation: Operation) -> Codec | None:
    """The operation's codec when its wire format is not JSON."""
    if operation.codec is None:
        return None
    found: Codec = _imported(operation.codec)
    return found


def routes(name: str) -> dict[str, Route]:
    """Every method of the REST entry `name`, each with its endpoint, handler, authorizer
    and codec: what its entry module serves, their modules imported now."""
    return {
        operation.method: Route(
            endpoint(name, operation.method),
            handler(operation),
            authorizer(operation),
            codec(operation),
        )
        for operation in rest_entry(name).operations
    }
