"""The launcher's table in docs/agentconnect.md is the rows of RUNTIMES, rendered."""

from __future__ import annotations

import dataclasses

import pytest

from cli import launch, runtimes_table

pytestmark = pytest.mark.pure


def test_the_pages_launcher_table_is_the_runtimes_rows_rendered() -> None:
    assert runtimes_table.write(check=True) == 0, "run `evidencia runtimes`"


def test_a_row_s_change_is_a_change_of_its_column(monkeypatch: pytest.MonkeyPatch) -> None:
    before = runtimes_table.render()
    codex = dataclasses.replace(launch.CODEX, model=("--model-of-tomorrow", "{value}"))
    monkeypatch.setitem(launch.RUNTIMES, "codex", codex)
    after = runtimes_table.render()
    [changed] = [
        (old, new)
        for old, new in zip(before.splitlines(), after.splitlines(), strict=True)
        if old != new
    ]
    assert changed[0].startswith("   | `model` |")
    assert changed[1].endswith("| `--model-of-tomorrow …` |")


def test_each_runtime_is_a_column_and_each_permission_mode_a_line() -> None:
    lines = runtimes_table.render().splitlines()
    assert lines[1].count("(`") == len(launch.RUNTIMES)
    modes = [line for line in lines if line.startswith("   | `permissionMode`")]
    assert len(modes) == len(runtimes_table.MODES)
