"""The table of sources in docs/otlp.md is the rows the code reads, rendered."""

from __future__ import annotations

from cli import sources_table
from functions.psychologist.telemetry.sources import CODEX, ROWS


def test_the_pages_table_of_sources_is_the_rows_rendered() -> None:
    assert sources_table.write(check=True) == 0, "run `evidencia sources`"


def test_every_row_is_a_line_of_the_table_naming_what_it_reads() -> None:
    table = sources_table.render()
    assert [line.split(" | ")[0] for line in table.splitlines()[3:-1]] == [
        f"| {row.docs.label}" for row in ROWS
    ]
    codex = next(line for line in table.splitlines() if line.startswith(f"| {CODEX.docs.label}"))
    assert "closed by `run_turn`" in codex
    assert "Process exited with code" in codex
