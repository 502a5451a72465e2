"""How much of the deployed code's data is untyped: every `dict[str, Any]` in `functions/`
and `shared/`, held at most at the ceiling. Stored documents and published replies get a
TypedDict where the data is (see docs/architecture.md, "Stored documents"); the count
left is the few places whose data is free-form by nature (log fields, OTLP attributes, a
JSON body before it is validated). `python -m tests.test_untyped` prints each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parents[1]
CEILING = 45
UNTYPED = re.compile(r"dict\[str, Any\]")


def untyped() -> list[str]:
    """Each `dict[str, Any]` in the deployed code, as `path:line`."""
    return [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("functions", "shared")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for _ in UNTYPED.finditer(line)
    ]


def test_the_deployed_code_holds_no_more_untyped_dicts_than_the_ceiling() -> None:
    found = untyped()
    assert len(found) <= CEILING, "\n".join(found)


def test_the_count_finds_each_untyped_dict_on_a_line() -> None:
    assert len(UNTYPED.findall("def f(a: dict[str, Any]) -> dict[str, Any]: ...")) == 2


if __name__ == "__main__":
    found = untyped()
    print("\n".join(found))
    print(f"{len(found)} dict[str, Any] in functions/ and shared/ (ceiling {CEILING})")
