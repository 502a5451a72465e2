"""A table a page holds between two markers, rendered from the code's rows: written again
by its command, or checked (`--check`) to fail when the page's copy is stale."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_between(
    target: Path, begin: str, end: str, rendered: str, what: str, command: str, check: bool
) -> int:
    """Put `rendered` (which opens with `begin` and closes with `end`) in place of the
    page's copy; with `check`, only say whether the copy is stale (1) or not (0)."""
    page = target.read_text(encoding="utf-8")
    start, stop = page.index(begin), page.index(end) + len(end)
    text = page[:start] + rendered + page[stop:]
    if check:
        if text != page:
            print(f"{target.relative_to(ROOT)}: {what} is stale (`evidencia {command}`)")
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {what} in {target}")
    return 0
