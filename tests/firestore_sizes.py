"""Production Firestore's document size limit, checked against every write the suite sends.

The emulator stores documents of any size; production refuses a commit whose document is
over 1 MiB (1,048,576 bytes) by its storage-size formula
(https://firebase.google.com/docs/firestore/storage-size): a document is the size of its
name plus the size of each field name and value plus 32 bytes; a name is the sum of its
path's segments (each string's UTF-8 bytes plus 1) plus 16; a string is its UTF-8 bytes
plus 1; an integer, double, timestamp or reference-free number 8 bytes; a boolean or null
1; a map the sum of its keys and values; an array the sum of its values. Every `Commit`
the tests send is recorded at the client's channel and each document it sets is measured.
"""

from __future__ import annotations

import threading
from typing import Any

import grpc
from google.cloud.firestore_v1.types import Write

LIMIT = 1_048_576
FIXED = {"integer_value": 8, "double_value": 8, "timestamp_value": 8, "boolean_value": 1}


def _string(text: str) -> int:
    return len(text.encode()) + 1


def name_size(name: str) -> int:
    path = name.split("/documents/", 1)[-1]
    return sum(_string(segment) for segment in path.split("/")) + 16


def value_size(value: Any) -> int:
    kind = value.WhichOneof("value_type")
    if kind in FIXED:
        return FIXED[kind]
    if kind == "null_value":
        return 1
    if kind == "string_value":
        return _string(value.string_value)
    if kind == "bytes_value":
        return len(value.bytes_value)
    if kind == "reference_value":
        return name_size(value.reference_value)
    if kind == "geo_point_value":
        return 16
    if kind == "array_value":
        return sum(value_size(item) for item in value.array_value.values)
    if kind == "map_value":
        return fields_size(value.map_value.fields)
    raise ValueError(f"a value of kind {kind} is not measured")


def fields_size(fields: Any) -> int:
    return sum(_string(key) + value_size(value) for key, value in fields.items())


def document_size(write: Any) -> int | None:
    """The stored size of the document a write sets; None for a delete or a transform."""
    raw = Write.pb(write) if isinstance(write, Write) else write
    if raw.WhichOneof("operation") != "update":
        return None
    return name_size(raw.update.name) + fields_size(raw.update.fields) + 32


class CommitRecorder(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Keeps the largest document every committed write set, by collection group."""

    def __init__(self) -> None:
        self.largest: dict[str, tuple[int, str]] = {}
        self.lock = threading.Lock()

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if details.method.endswith("/Commit"):
            for write in request.writes:
                self._measure(write)
        return continuation(details, request)

    def _measure(self, write: Any) -> None:
        size = document_size(write)
        if size is None:
            return
        name = Write.pb(write).update.name
        group = name.split("/")[-2]
        with self.lock:
            if size > self.largest.get(group, (0, ""))[0]:
                self.largest[group] = (size, name)


def oversized(recorder: CommitRecorder) -> list[str]:
    return [
        f"{group}: {size:,} bytes ({name.split('/documents/', 1)[-1]})"
        for group, (size, name) in sorted(recorder.largest.items())
        if size > LIMIT
    ]
