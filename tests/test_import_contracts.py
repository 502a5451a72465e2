"""The layering contract that reads the registry covers each HTTP entry point's modules."""

from __future__ import annotations

import pytest

from cli.import_contracts import http_entry_modules

pytestmark = pytest.mark.pure


def test_the_contract_covers_each_entry_module_and_the_handlers_and_authorizers_it_names() -> None:
    modules = http_entry_modules()
    assert "functions.research.entry.ask" in modules
    assert "functions.research.service" in modules
    assert "functions.psychologist.effects" in modules
    assert "functions.agentconnect.audience" in modules, "an authorizer named by the registry"
    assert not [module for module in modules if "worker" in module], "workers may ask Gemini"
    assert "functions.psychologist.batch" not in modules, "the sweep may poll Gemini's batches"
