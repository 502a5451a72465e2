"""Logs through the standard library, one JSON object a line on stdout in Cloud Logging's
structured format, for our code, Werkzeug, functions-framework and the client libraries
alike: one handler on the root logger, installed on first use.

Every line carries `severity`, `message` and `time`; inside a request or a job it also
carries the trace (`logging.googleapis.com/trace` and `spanId`, from the request's
`X-Cloud-Trace-Context` or `traceparent`, or stored with the job by the request that
created it) and `logging.googleapis.com/labels` with the request id and the job's id.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from http import HTTPStatus
from types import MappingProxyType
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

INFO, WARNING, ERROR = logging.INFO, logging.WARNING, logging.ERROR
TRACE = "logging.googleapis.com/trace"
SPAN = "logging.googleapis.com/spanId"
LABELS = "logging.googleapis.com/labels"
LABEL_KEYS = ("request_id", "run_id", "analysis_id", "evaluation")
"""Context values that become labels: the request and the job a line belongs to."""

_CONTEXT: ContextVar[Mapping[str, str]] = ContextVar("log_context", default=MappingProxyType({}))
_CLOUD_TRACE = re.compile(r"^([0-9a-fA-F]{32})(?:/(\d{1,20}))?")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


class CloudLoggingFormatter(JsonFormatter):
    """Cloud Logging's special fields, from the record and from the current context."""

    def __init__(self) -> None:
        super().__init__(
            "%(levelname)s %(message)s %(name)s",
            rename_fields={"levelname": "severity", "name": "logger"},
            timestamp="time",
        )

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        context = _CONTEXT.get()
        if "trace" in context:
            log_data[TRACE] = f"projects/{_project()}/traces/{context['trace']}"
        if "span" in context:
            log_data[SPAN] = context["span"]
        labels = {key: context[key] for key in LABEL_KEYS if key in context}
        if labels:
            log_data[LABELS] = labels
        return log_data


class _Stdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stdout` is at the time (a test may have replaced it)."""

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, _value: Any) -> None:
        return


def _project() -> str:
    from shared.instance import settings

    return settings().project_id or "-"


@cache
def _logger() -> logging.Logger:
    """The root logger with the one JSON handler (libraries' warnings and errors reach it,
    Werkzeug's access lines do not), and ours under it at INFO."""
    _skip_unused_record_fields()
    root = logging.getLogger()
    if not any(isinstance(handler, _Stdout) for handler in root.handlers):
        handler = _Stdout()
        handler.setFormatter(CloudLoggingFormatter())
        root.handlers = [handler]
        root.setLevel(logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    ours = logging.getLogger("evidencia")
    ours.setLevel(logging.INFO)
    return ours


def _skip_unused_record_fields() -> None:
    """A line names no source file, thread or process, so no record looks them up: the
    caller's frame walk alone is a fifth of a line's cost (the logging HOWTO's
    "Optimization", https://docs.python.org/3/howto/logging.html#optimization)."""
    logging._srcfile = None  # noqa: SLF001 - the HOWTO names this switch
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def setup() -> None:
    """Send every logger's lines through the one JSON handler from now on."""
    _logger()


def _fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields as `extra`, renamed where they would clash with a LogRecord attribute."""
    return {f"{key}_" if key in RESERVED_ATTRS else key: value for key, value in fields.items()}


def log(level: int, message: str, **fields: Any) -> None:
    _logger().log(level, message, extra=_fields(fields))


def info(message: str, **fields: Any) -> None:
    log(logging.INFO, message, **fields)


def warning(message: str, **fields: Any) -> None:
    log(logging.WARNING, message, **fields)


def error(message: str, **fields: Any) -> None:
    log(logging.ERROR, message, **fields)


def severity_of(status: int) -> int:
    """How loud a request's line is: 5xx ERROR, 4xx WARNING, else INFO."""
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        return logging.ERROR
    return logging.WARNING if status >= HTTPStatus.BAD_REQUEST else logging.INFO


def trace_of(cloud_trace: str | None, traceparent: str | None) -> dict[str, str]:
    """The trace and span a request carries, from `X-Cloud-Trace-Context` or `traceparent`."""
    cloud = _CLOUD_TRACE.match(cloud_trace or "")
    if cloud:
        found = {"trace": cloud.group(1).lower()}
        span = cloud.group(2)
        return found | ({"span": f"{int(span):016x}"} if span else {})
    parent = _TRACEPARENT.match((traceparent or "").strip().lower())
    if parent and parent.group(1) != "0" * 32:
        return {"trace": parent.group(1), "span": parent.group(2)}
    return {}


def bind(**values: str | None) -> None:
    """Add values to the context of the current request or job (None values are left out)."""
    _CONTEXT.set(
        MappingProxyType({**_CONTEXT.get(), **{k: v for k, v in values.items() if v is not None}})
    )


def current_trace() -> str | None:
    """The trace of the current request, to store with a job it creates."""
    return _CONTEXT.get().get("trace")


@contextmanager
def scope(**values: str | None) -> Iterator[None]:
    """A fresh context for one request or one delivery, gone when it ends."""
    token = _CONTEXT.set(MappingProxyType({}))
    bind(**values)
    try:
        yield
    finally:
        _CONTEXT.reset(token)
