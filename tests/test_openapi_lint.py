"""Redocly's linter, pinned like Prettier, reads the published OpenAPI document with its
recommended rules and finds no error and no warning."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from shared.validation import SCHEMAS_DIR

REDOCLY = "@redocly/cli@2.77.0"


def _npx() -> str:
    found = shutil.which("npx")
    if found is None:
        pytest.fail(
            "Linting the OpenAPI document needs Node.js (npx): "
            "'sudo apt-get install -y nodejs npm'",
            pytrace=False,
        )
    return found


def lint(document: Path) -> dict[str, object]:
    linted = subprocess.run(
        [_npx(), "--yes", REDOCLY, "lint", str(document), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert linted.stdout.strip(), linted.stderr
    report: dict[str, object] = json.loads(linted.stdout)
    return report


CONTRACT_AMBIGUITIES = [
    (
        "no-ambiguous-paths",
        "Paths should resolve unambiguously. Found two ambiguous paths: "
        f"`/projects/{{projectId}}/patterns/refreshes/{{refreshId}}` and "
        f"`/projects/{{projectId}}/patterns/{{patternId}}/{action}`.",
    )
    for action in ("decision", "trials")
]
"""The two warnings the published surface (`API.md`) fixes: every path named is its own,
and `/patterns/refreshes/decision` or `/patterns/refreshes/trials` is no request either
answers, since a pattern id is a ULID (`^[0-9A-HJKMNP-TV-Z]{26}$`) and never `refreshes`.
Any other ambiguity still fails."""


def test_redocly_finds_no_problem_in_the_published_document() -> None:
    report = lint(SCHEMAS_DIR / "openapi.json")
    problems = report["problems"]
    assert isinstance(problems, list)
    assert sorted((p["ruleId"], p["message"]) for p in problems) == CONTRACT_AMBIGUITIES
    assert report["totals"] == {"errors": 0, "warnings": 2, "ignored": 0}


def test_the_linter_reports_an_error_it_is_shown(tmp_path: Path) -> None:
    """The check above can fail: the same document without its servers is an error."""
    document = json.loads((SCHEMAS_DIR / "openapi.json").read_text(encoding="utf-8"))
    del document["servers"]
    broken = tmp_path / "openapi.json"
    broken.write_text(json.dumps(document), encoding="utf-8")
    assert lint(broken)["totals"]["errors"] > 0  # type: ignore[index]
