"""Decoding Firestore document events delivered as CloudEvents.

Eventarc sends `DocumentEventData` as protobuf bytes; the emulator sends the same message
base64-encoded under the same `application/protobuf` content type. Both are accepted.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.events.cloud.firestore import DocumentEventData

_PROTOBUF_FIRST_BYTES = frozenset({0x0A, 0x12, 0x1A})


@dataclass(frozen=True)
class DocumentEvent:
    event_id: str
    event_type: str
    path: str
    """The document path relative to the database root, e.g. `workspaces/w/runs/r`."""


class EventDecodeError(ValueError):
    pass


def _payload_bytes(data: Any) -> bytes:
    if data is None:
        return b""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if not raw or raw[0] in _PROTOBUF_FIRST_BYTES:
        return raw
    try:
        return base64.b64decode(raw, validate=True)
    except binascii.Error as error:
        raise EventDecodeError("the event payload is neither protobuf nor base64") from error


def _relative_path(name: str) -> str:
    _, marker, path = name.partition("/documents/")
    if not marker:
        raise EventDecodeError(f"unexpected document name {name!r}")
    return path


def decode_document_event(event: Any) -> DocumentEvent:
    """The document an event is about, from the payload or the `document` attribute."""
    attributes = event.get_attributes() if hasattr(event, "get_attributes") else {}
    payload = _payload_bytes(event.get_data() if hasattr(event, "get_data") else event.data)
    path = ""
    if payload:
        try:
            message = DocumentEventData.deserialize(payload)
        except Exception as error:  # protobuf raises several unrelated types on bad input
            raise EventDecodeError("the event payload is not DocumentEventData") from error
        name = message.value.name or message.old_value.name
        path = _relative_path(name) if name else ""
    path = path or str(attributes.get("document", ""))
    if not path:
        raise EventDecodeError("the event names no document")
    return DocumentEvent(
        event_id=str(attributes.get("id", "")),
        event_type=str(attributes.get("type", "")),
        path=path,
    )


@cache
def _pattern(document: str) -> re.Pattern[str]:
    """`workspaces/{workspaceId}/runs/{runId}` as a regex with one group per parameter."""
    parts = re.split(r"\{(\w+)\}", document)
    literal, names = parts[::2], parts[1::2]
    groups = [f"(?P<{name}>[^/]+)" for name in names]
    body = "".join(
        re.escape(text) + group for text, group in zip(literal, [*groups, ""], strict=True)
    )
    return re.compile(f"^{body}$")


def path_params(document: str, path: str) -> dict[str, str] | None:
    """The parameters of `path` under the document pattern, or None when it does not match."""
    match = _pattern(document).match(path)
    return match.groupdict() if match else None
