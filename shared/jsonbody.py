"""A strict JSON reader for request bodies: only what Firestore can store gets through.

`json` itself accepts `NaN` and `Infinity`, integers of any length, lone UTF-16 surrogates
and any nesting (until the parser recurses too deep). This reader, a thin layer over
`json` with hooks, refuses each of them with an issue naming its path, and checks what
Firestore would refuse later (an array directly inside an array, an empty or reserved
map key), so that a body that passes can be stored and read back as JSON.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from shared.errors import Issue

JsonObject = dict[str, Any]
"""A JSON object as read: its shape is what its published schema says, checked before use."""

MAX_DEPTH = 16
"""Objects and arrays nested deeper than this are refused (Firestore stores 20 levels of
maps, and our documents wrap what they are sent in a few levels of their own)."""
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_KEY_BYTES = 1500
"""Firestore's limit on a field name."""
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_RESERVED_KEY = re.compile(r"^__.*__$")


class JsonBodyError(ValueError):
    """The body is not JSON this API takes; `issues` says where and why."""

    def __init__(self, message: str, issues: list[Issue] | None = None) -> None:
        super().__init__(message)
        self.issues = issues or []


@dataclass(frozen=True)
class _Refused:
    """A literal the hooks refused, left in place so that the walk can name its path."""

    literal: str
    why: str


INT_DIGITS_MAX = 20
"""More characters than any 64-bit integer (with its sign) is written with."""


def _number_int(literal: str) -> int | _Refused:
    if len(literal) > INT_DIGITS_MAX:
        return _Refused(literal[:24], "an integer outside the 64-bit range")
    value = int(literal)
    if not INT_MIN <= value <= INT_MAX:
        return _Refused(literal, "an integer outside the 64-bit range")
    return value


def _number_float(literal: str) -> float | _Refused:
    value = float(literal)
    return value if math.isfinite(value) else _Refused(literal[:24], "a number too large")


def _constant(literal: str) -> _Refused:
    return _Refused(literal, "not a JSON number")


def nesting_depth(text: str) -> int:
    """How deep objects and arrays nest, counted without recursion."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _issue(path: list[str | int], message: str, code: str = "custom") -> Issue:
    return {"path": path, "message": message, "code": code}


def _value_issues(body: Any) -> list[Issue]:
    """Every refused literal, lone surrogate, nested array and unstorable key, by path."""
    found: list[Issue] = []
    pending: list[tuple[list[Any], Any, bool]] = [([], body, False)]
    while pending:
        path, value, in_array = pending.pop()
        if isinstance(value, _Refused):
            found.append(_issue(path, f"{value.literal!r} is {value.why}"))
        elif isinstance(value, str):
            if _SURROGATE.search(value):
                found.append(_issue(path, "The text holds a lone UTF-16 surrogate"))
        elif isinstance(value, list):
            if in_array:
                found.append(_issue(path, "An array may not stand directly inside an array"))
            pending += [([*path, i], item, True) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            for key, item in value.items():
                found += _key_issues([*path, key], key)
                pending.append(([*path, key], item, False))
    return found


def _key_issues(path: list[Any], key: str) -> list[Issue]:
    if key == "":
        return [_issue(path, "An object key may not be empty")]
    if _SURROGATE.search(key):
        return [_issue(path[:-1], "An object key holds a lone UTF-16 surrogate")]
    if _RESERVED_KEY.match(key):
        return [_issue(path, "Keys that begin and end with __ are reserved")]
    if len(key.encode()) > MAX_KEY_BYTES:
        return [_issue(path[:-1], f"An object key is longer than {MAX_KEY_BYTES} bytes")]
    return []


def parse(raw: bytes) -> Any:
    """The JSON value in `raw`, or `JsonBodyError` saying why it is refused."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JsonBodyError(f"The body is not valid UTF-8: {error.reason}.") from None
    # No more opening brackets than MAX_DEPTH cannot nest deeper: the scan is skipped.
    depth = nesting_depth(text) if text.count("{") + text.count("[") > MAX_DEPTH else 0
    if depth > MAX_DEPTH:
        raise JsonBodyError(f"The body nests {depth} levels deep; at most {MAX_DEPTH} are taken.")
    try:
        body = json.loads(
            text, parse_int=_number_int, parse_float=_number_float, parse_constant=_constant
        )
    except json.JSONDecodeError as error:
        raise JsonBodyError(f"The body is not valid JSON: {error}.") from None
    issues = _value_issues(body)
    if issues:
        raise JsonBodyError("The body holds values that cannot be stored.", issues)
    return body


def dumps(value: Any) -> str:
    """Compact JSON that never holds NaN or Infinity."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)
