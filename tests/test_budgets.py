"""Byte budgets measure what Firestore stores, not JSON characters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.budgets import clip_utf8, stored_size

pytestmark = pytest.mark.pure


def test_a_text_is_cut_by_utf8_bytes_and_never_inside_a_character() -> None:
    wide = "\U0001d538" * 10
    assert clip_utf8(wide, 40) == (wide, False)
    assert clip_utf8(wide, 39) == ("\U0001d538" * 9, True)
    assert clip_utf8("abc", 2) == ("ab", True)


def test_a_small_integer_costs_eight_bytes_and_a_wide_character_four() -> None:
    assert stored_size([1] * 10) == 80
    assert stored_size({"é": "\U0001d538"}) == (2 + 1) + (4 + 1)
    assert stored_size({"at": datetime(2026, 1, 1, tzinfo=UTC), "ok": True, "n": None}) == (
        3 + 8 + 3 + 1 + 2 + 1
    )
