"""Model answers parsed into their typed shapes, for the workers only (pydantic stays off
the HTTP request path). Each answer has passed its published JSON Schema first; parsing
is strict, so nothing is coerced and a shape the schema and the type disagree on fails."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter

Shape = TypeVar("Shape")

_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def parse_strictly(kind: type[Shape], data: Any) -> Shape:
    adapter = _ADAPTERS.get(kind) or _ADAPTERS.setdefault(kind, TypeAdapter(kind))
    parsed: Shape = adapter.validate_python(data, strict=True)
    return parsed
