"""Production Firestore's document size limit, checked against every write the suite sends.

The emulator stores documents of any size; production refuses a commit whose document is
over 1 MiB (1,048,576 bytes) by its storage-size formula
(https://firebase.google.com/docs/firestore/storage-size): a document is the size of its
name plus the size of each field name and value plus 32 bytes; a name is the sum of its
path's segments (each string's UTF-8 bytes plus 1) plus 16; a string is its UTF-8 bytes
plus 1; an integer, double, timestamp or reference-free number 8 bytes; a boolean or null
1; a map the sum of its keys and values; an array the sum of its values. Every `Commit`
the tests send is recorded at the client's channel and each document it sets is measured.

Index entries too: production refuses a document with more than 40,000
(https://firebase.google.com/docs/firestore/quotas#indexes). Each field that is neither a
map nor an array has two single-field entries (ascending and descending), each subfield
of a map likewise, an array one `array-contains` entry per distinct element; a field
whose `fieldOverrides` entry in `firestore.indexes.json` turns its indexes off has none,
with everything under it. Composite entries (one per composite index of the group, a few
here) are counted as one each.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import grpc
from google.cloud.firestore_v1.types import Write

LIMIT = 1_048_576
ENTRY_LIMIT = 40_000
INDEXES = Path(__file__).resolve().parents[1] / "firestore.indexes.json"
FIXED = {"integer_value": 8, "double_value": 8, "timestamp_value": 8, "boolean_value": 1}


def _string(text: str) -> int:
    return len(text.encode()) + 1


def name_size(name: str) -> int:
    path = name.split("/documents/", 1)[-1]
    return sum(_string(segment) for segment in path.split("/")) + 16


def value_size(value: Any) -> int:  # noqa: PLR0911 - one return per Firestore value type
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


def exempted() -> set[tuple[str, str]]:
    """(collection group, field path) of every field whose indexes are turned off."""
    overrides = json.loads(INDEXES.read_text()).get("fieldOverrides", [])
    return {(o["collectionGroup"], o["fieldPath"]) for o in overrides if o.get("indexes") == []}


def _entries(fields: Any, group: str, prefix: str, exempt: set[tuple[str, str]]) -> int:
    count = 0
    for key, value in fields.items():
        path = f"{prefix}{key}"
        if (group, path) in exempt:
            continue
        kind = value.WhichOneof("value_type")
        if kind == "map_value":
            count += _entries(value.map_value.fields, group, f"{path}.", exempt)
        elif kind == "array_value":
            count += len({item.SerializeToString() for item in value.array_value.values})
        else:
            count += 2
    return count


def index_entries(write: Any, exempt: set[tuple[str, str]], composites: int) -> int | None:
    """The index entries of the document a write sets; None for a delete or a transform."""
    raw = Write.pb(write) if isinstance(write, Write) else write
    if raw.WhichOneof("operation") != "update":
        return None
    group = raw.update.name.split("/")[-2]
    return _entries(raw.update.fields, group, "", exempt) + composites


class CommitRecorder(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Keeps the largest document every committed write set, by collection group, by
    size and by index entries."""

    def __init__(self) -> None:
        self.largest: dict[str, tuple[int, str]] = {}
        self.most_entries: dict[str, tuple[int, str]] = {}
        self.lock = threading.Lock()
        self.exempt = exempted()
        groups = [i["collectionGroup"] for i in json.loads(INDEXES.read_text())["indexes"]]
        self.composites = {group: groups.count(group) for group in groups}

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
        entries = index_entries(write, self.exempt, self.composites.get(group, 0)) or 0
        with self.lock:
            if size > self.largest.get(group, (0, ""))[0]:
                self.largest[group] = (size, name)
            if entries > self.most_entries.get(group, (0, ""))[0]:
                self.most_entries[group] = (entries, name)

    def exported(self) -> dict[str, list[tuple[str, int, str]]]:
        """The largest documents recorded, as plain lists: what a test worker hands the run."""
        with self.lock:
            return {
                "largest": [(group, *kept) for group, kept in self.largest.items()],
                "most_entries": [(group, *kept) for group, kept in self.most_entries.items()],
            }

    def absorb(self, exported: dict[str, list[tuple[str, int, str]]]) -> None:
        """Keep, per collection group, the larger of this run's and another worker's."""
        with self.lock:
            for kept, key in ((self.largest, "largest"), (self.most_entries, "most_entries")):
                for group, figure, name in exported[key]:
                    if figure > kept.get(group, (0, ""))[0]:
                        kept[group] = (figure, name)


def oversized(recorder: CommitRecorder) -> list[str]:
    too_large = [
        f"a document over Firestore's 1 MiB: {group}: {size:,} bytes "
        f"({name.split('/documents/', 1)[-1]})"
        for group, (size, name) in sorted(recorder.largest.items())
        if size > LIMIT
    ]
    too_many = [
        f"a document over Firestore's 40,000 index entries: {group}: {entries:,} entries "
        f"({name.split('/documents/', 1)[-1]})"
        for group, (entries, name) in sorted(recorder.most_entries.items())
        if entries > ENTRY_LIMIT
    ]
    return too_large + too_many
