"""The probability of an answer's value from token log-probabilities, when Gemini gives them."""

from __future__ import annotations

import math
import re

_VALUE = re.compile(r'"value"\s*:\s*(true|false|"(?:[^"\\]|\\.)*")')


def value_probability(text: str, tokens: list[tuple[str, float]] | None) -> float | None:
    """exp(sum of the log-probabilities of the tokens that spell the value), or None when
    the tokens do not spell the answer's text."""
    if not tokens or "".join(token for token, _ in tokens) != text:
        return None
    match = _VALUE.search(text)
    if match is None:
        return None
    start, end = match.span(1)
    total, offset = 0.0, 0
    for token, logprob in tokens:
        token_end = offset + len(token)
        if token_end > start and offset < end:
            total += logprob
        offset = token_end
    return min(1.0, math.exp(total))
