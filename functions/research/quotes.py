"""The passage each citation rests on: the model proposes a quote of the cited item's text
at the cited revision, and code finds it there or refuses it, saying why.

What counts as a match: the quote, with every run of whitespace (spaces, tabs, line
breaks) read as one space and its ends trimmed, appears in the item's text read the same
way. Nothing else is forgiven: not case, not punctuation (a curly quote is not a straight
one), not an ellipsis joining two passages, not a paraphrase. The offsets kept are the
passage's first and last characters in the item's text as stored, so `text[start:end]`
is the passage exactly as the item says it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_WHITESPACE = re.compile(r"\s+")
ELLIPSES = ("...", "\u2026")
MAX_QUOTE_CHARS = 300
"""The longest passage kept: a sentence or three. An answer holds at most 380 citations,
and a run keeps every passage in its one document, which must stay under 1 MiB."""


@dataclass(frozen=True)
class Located:
    start: int
    end: int


def _collapsed(text: str) -> tuple[str, list[int]]:
    """`text` with each run of whitespace as one space, and for each character kept the
    index it came from."""
    kept: list[str] = []
    origin: list[int] = []
    index = 0
    for match in _WHITESPACE.finditer(text):
        for offset in range(index, match.start()):
            kept.append(text[offset])
            origin.append(offset)
        kept.append(" ")
        origin.append(match.start())
        index = match.end()
    for offset in range(index, len(text)):
        kept.append(text[offset])
        origin.append(offset)
    return "".join(kept), origin


def locate(quote: str, text: str) -> Located | None:
    """Where the quote stands in the text, by the rule above; None when it does not."""
    wanted = _WHITESPACE.sub(" ", quote).strip()
    if not wanted:
        return None
    collapsed, origin = _collapsed(text)
    found = collapsed.find(wanted)
    if found < 0:
        return None
    last = found + len(wanted) - 1
    return Located(origin[found], origin[last] + 1)


@dataclass(frozen=True)
class Cited:
    """One citation of one statement, as the model proposed it."""

    path: str
    """Where the citation stands in the answer (`answer.evidence[0]`, `sentiment[1]`)."""
    evidence_id: str
    revision: int
    quote: str


def refusal(cited: Cited, texts: Mapping[str, str]) -> str | None:
    """Why a citation's quote is refused, naming the item, the revision and the reason;
    None when it is found. `texts` holds each item's text at the revision the model was
    shown (the revision every citation has already been held to)."""
    text = texts.get(cited.evidence_id, "")
    where = f"evidence {cited.evidence_id} at revision {cited.revision}"
    if not _WHITESPACE.sub(" ", cited.quote).strip():
        return f"the quote for {where} is empty"
    found = locate(cited.quote, text)
    if found is None:
        return _missing(cited, texts, where)
    if found.end - found.start > MAX_QUOTE_CHARS:
        return (
            f"the quote of {where} is {found.end - found.start} characters; quote the shortest "
            f"passage that supports the statement, at most {MAX_QUOTE_CHARS}"
        )
    return None


def _missing(cited: Cited, texts: Mapping[str, str], where: str) -> str:
    """Why a quote is not found in its item, most telling reason first."""
    quote, text = cited.quote, texts.get(cited.evidence_id, "")
    if any(mark in quote for mark in ELLIPSES) and not any(mark in text for mark in ELLIPSES):
        return f"the quote joins passages with an ellipsis; quote one passage of {where} verbatim"
    if len(_WHITESPACE.sub(" ", quote).strip()) > len(_WHITESPACE.sub(" ", text).strip()):
        return f"the quote is longer than the text of {where} ({len(text)} characters)"
    elsewhere = sorted(
        other for other, body in texts.items() if other != cited.evidence_id and locate(quote, body)
    )
    if elsewhere:
        return f"the quote is in evidence {elsewhere[0]}, not in {where}"
    return (
        f"the quote is not in the text of {where} (a match is verbatim after collapsing "
        "whitespace: case, punctuation and wording must be as the item says)"
    )
