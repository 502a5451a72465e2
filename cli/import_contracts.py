"""The import-linter contract that reads the registry (`lint-imports` loads it through
`contract_types` in pyproject.toml): the import graph cannot follow the handlers and
authorizers an HTTP entry point imports by name, so the registry names them here."""

from __future__ import annotations

from typing import Any

from importlinter.contracts.forbidden import ForbiddenContract

from functions.registry import public_entries


def http_entry_modules() -> list[str]:
    """Every module a public HTTP entry point imports when it starts: its entry module
    and the modules of its operations' handlers and authorizers (a sweep, private and
    called once a minute, may poll Gemini)."""
    modules = {entry.module for entry in public_entries()}
    for entry in public_entries():
        for operation in entry.operations:
            references = (operation.handler, operation.audience)
            modules |= {reference.split(":")[0] for reference in references if reference}
    return sorted(modules)


class HttpEntriesContract(ForbiddenContract):
    """A `forbidden` contract whose source modules are `http_entry_modules()`."""

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        sources = {**contract_options, "source_modules": http_entry_modules()}
        super().__init__(name, session_options, sources)
