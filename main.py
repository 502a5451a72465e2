"""Deploy entry: every registered entry point by name, each imported only when asked for.

`functions-framework --source main.py --target NAME` resolves NAME through `__getattr__`,
so serving one function never imports the modules (and dependencies) of the others.
"""

from __future__ import annotations

import importlib
from typing import Any

from functions.registry import BY_NAME


def __getattr__(name: str) -> Any:
    entry = BY_NAME.get(name)
    if entry is None:
        raise AttributeError(f"module 'main' has no entry point {name!r}")
    return getattr(importlib.import_module(entry.module), name)


def __dir__() -> list[str]:
    return sorted(BY_NAME)
