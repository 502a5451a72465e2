"""Provider faults on demand, the same table for every worker.

Each fault scripts the Gemini test server (and settings when it needs them) and names
the failure code the job must settle with; `None` means the job must complete after the
fault, because the fault was transient and retried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cli.gemini_stand_in import GeminiTestServer


@dataclass(frozen=True)
class Fault:
    name: str
    script: Callable[[GeminiTestServer], None]
    code: str | None
    env: dict[str, str] = field(default_factory=dict)


CLOSED_PORT = {"GEMINI_BASE_URL": "http://127.0.0.1:9"}
"""Nothing listens on the discard port here: connecting is refused at once."""
FAULTS = [
    Fault("non_json_200", lambda g: g.answer_raw(b"<html>busy</html>"), "provider_unavailable"),
    Fault("empty_body_200", lambda g: g.answer_raw(b""), "generation_unconfirmed"),
    Fault("no_candidates", lambda g: g.answer_raw(b'{"candidates": []}'), "generation_unconfirmed"),
    Fault("safety", lambda g: g.finish("SAFETY"), "generation_unconfirmed"),
    Fault(
        "hang_past_timeout",
        lambda g: g.stall(1.0, times=3),
        "provider_unavailable",
        {"GEMINI_TIMEOUT_MS": "300"},
    ),
    Fault("connection_reset", lambda g: g.reset_connection(times=3), "provider_unavailable"),
    Fault("closed_port", lambda _server: None, "provider_unavailable", CLOSED_PORT),
    Fault("429_then_success", lambda g: g.quota("minute", delay_s=0.2), None),
    Fault("500s_then_success", lambda g: g.fail(500, times=2), None),
]
FAULT_IDS = [fault.name for fault in FAULTS]
