"""The strict body reader refuses nesting past MAX_DEPTH, counting only real brackets."""

from __future__ import annotations

import pytest

from shared import jsonbody
from shared.jsonbody import MAX_DEPTH

pytestmark = pytest.mark.pure


def nested(levels: int) -> bytes:
    """Objects and arrays in turn, `levels` deep (Firestore refuses an array directly
    inside an array)."""
    opening = [b'{"a":' if level % 2 == 0 else b"[" for level in range(levels - 1)]
    closing = [b"}" if level % 2 == 0 else b"]" for level in reversed(range(levels - 1))]
    return b"".join(opening) + b"{}" + b"".join(closing)


def test_a_body_nested_to_the_limit_is_read() -> None:
    assert jsonbody.parse(nested(MAX_DEPTH)) is not None


def test_a_body_nested_one_level_past_the_limit_is_refused() -> None:
    with pytest.raises(jsonbody.JsonBodyError, match=f"nests {MAX_DEPTH + 1} levels deep"):
        jsonbody.parse(nested(MAX_DEPTH + 1))


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '{"a": "' + "[" * (MAX_DEPTH * 2) + '", "b": [{"c": [3]}, {"d": {}}]}'
    assert jsonbody.parse(text.encode())["b"][0] == {"c": [3]}
