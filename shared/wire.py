"""What goes over the wire to Gemini and back, exactly, for the audit record.

The `google-genai` client is built with these HTTP event hooks; a caller that wants the
exact JSON sent and received wraps its call in `recording()`. The hooks run in the
calling thread, so concurrent calls never see each other's texts. Credentials travel in
headers, never in these bodies.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class Wire:
    request: str = ""
    """The last request body sent (the last try's, when there were retries)."""
    response: str = ""
    """The last response body received; empty when none arrived."""


_current = threading.local()


@contextmanager
def recording() -> Iterator[Wire]:
    wire = Wire()
    _current.wire = wire
    try:
        yield wire
    finally:
        _current.wire = None


def _on_request(request: Any) -> None:
    wire: Wire | None = getattr(_current, "wire", None)
    if wire is not None:
        wire.request, wire.response = request.content.decode("utf-8", "replace"), ""


def _on_response(response: Any) -> None:
    wire: Wire | None = getattr(_current, "wire", None)
    if wire is not None:
        response.read()
        wire.response = response.content.decode("utf-8", "replace")


EVENT_HOOKS = {"request": [_on_request], "response": [_on_response]}
