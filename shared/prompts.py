"""Untrusted data inside a prompt: JSON that cannot close or open the tags around it."""

from __future__ import annotations

import json
from typing import Any


def fenced(payload: Any) -> str:
    """`payload` as compact JSON with `<` and `>` written as `\\u003c` and `\\u003e`.

    Inside `<tag>…</tag>` in a prompt, user or model text can then never end the fence
    or start a tag of its own, whatever it says; `json.loads` still reads it back intact.
    """
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e")
