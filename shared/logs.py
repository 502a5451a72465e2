"""Structured logs in Cloud Logging's JSON format: one object per line on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any


def log(severity: str, message: str, **fields: Any) -> None:
    entry = {"severity": severity, "message": message, **fields}
    sys.stdout.write(json.dumps(entry, default=str) + "\n")
    sys.stdout.flush()


def info(message: str, **fields: Any) -> None:
    log("INFO", message, **fields)


def warning(message: str, **fields: Any) -> None:
    log("WARNING", message, **fields)


def error(message: str, **fields: Any) -> None:
    log("ERROR", message, **fields)
