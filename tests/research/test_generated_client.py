"""A Python client generated from the served `/openapi.json` by openapi-python-client, as a
user would make one, runs the research flow and gets typed answers back."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from cli.host import LocalHost
from tests.research.conftest import Research

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "evidencia_generated_client"
BINARY_BODIES = {"application/x-protobuf": "application/octet-stream"}
"""The OTLP endpoint's protobuf bodies, typed as the generator types binary ones."""


@pytest.fixture(scope="module")
def generated(host: LocalHost, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client package, generated with warnings treated as failures: a response the
    generator cannot type (it drops it, and the call returns None) fails here. The
    generator formats what it writes with ruff, found on PATH beside it."""
    folder = tmp_path_factory.mktemp("client")
    document = folder / "openapi.json"
    document.write_bytes(requests.get(f"{host.url}/openapi.json", timeout=10).content)
    config = folder / "config.json"
    config.write_text(json.dumps({"content_type_overrides": BINARY_BODIES}))
    tools = {"PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ['PATH']}"}
    made = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(document),
            "--output-path",
            str(folder / PACKAGE),
            "--meta",
            "none",
            "--config",
            str(config),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, **tools},
    )
    assert made.returncode == 0, made.stdout + made.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def _part(package: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{package.__name__}.{name}")


def test_the_generated_client_asks_reads_and_cancels_with_typed_answers(
    generated: ModuleType, host: LocalHost, research: Research
) -> None:
    models = _part(generated, "models")
    ask = _part(generated, "api.research.research_ask")
    status = _part(generated, "api.research.research_status")
    cancel = _part(generated, "api.research.research_cancel")
    client = generated.AuthenticatedClient(base_url=str(host.url), token=research.member)
    scope = {"workspace_id": research.workspace, "conversation_id": research.conversation}
    overview = models.QueueACitedAnalysisRun.from_dict(scope | {"request_kind": "overview"})

    research.world.gemini.answer_json(research.answer("Onboarding is slow."))
    asked = ask.sync(client=client, body=overview)
    assert isinstance(asked, models.ResearchAskResponse), asked
    run_id = str(asked.run.id)
    assert research.settled(run_id)["run"]["status"] == "completed"
    read = status.sync(
        client=client, body=models.ResearchStatusRequest.from_dict(scope | {"run_id": run_id})
    )
    assert isinstance(read, models.ResearchStatusResponse), read
    assert read.run.status == models.ResearchStatusResponseRunStatus.COMPLETED
    assert read.message.answer.answer.statement == "Onboarding is slow."

    gate = research.world.gemini.held_answer_json(research.answer())
    held = ask.sync(client=client, body=overview)
    assert isinstance(held, models.ResearchAskResponse), held
    stop = models.CancelARun.from_dict(scope | {"run_id": str(held.run.id)})
    cancelled = cancel.sync(client=client, body=stop)
    gate.open()
    assert isinstance(cancelled, models.ResearchCancelResponse), cancelled
    assert cancelled.run.status.value == "cancelled"

    refused = status.sync(
        client=generated.AuthenticatedClient(base_url=str(host.url), token=research.viewer),
        body=models.ResearchStatusRequest.from_dict(scope | {"run_id": research.workspace}),
    )
    assert isinstance(refused, models.AnError), refused
    assert refused.code == "not_found"
