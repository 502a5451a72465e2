"""A quote is found in the cited item's text by one rule: verbatim after collapsing runs
of whitespace. Each way a model's quote can miss is refused for its own reason."""

from __future__ import annotations

import pytest

from functions.research.quotes import MAX_QUOTE_CHARS, Cited, locate, refusal
from shared.budgets import stored_size

pytestmark = pytest.mark.pure

TEXT = 'Onboarding took me  two days.\nThe "setup" wizard is confusing.'
TEXTS = {"E1": TEXT, "E2": "Support answered fast."}


def cited(quote: str, evidence_id: str = "E1") -> Cited:
    return Cited("answer.evidence[0]", evidence_id, 3, quote)


def test_a_quote_is_found_across_collapsed_whitespace_at_offsets_into_the_stored_text() -> None:
    found = locate("took me two days. The", TEXT)
    assert found is not None
    assert TEXT[found.start : found.end] == "took me  two days.\nThe"
    whole = locate(TEXT, TEXT)
    assert whole is not None
    assert (whole.start, whole.end) == (0, len(TEXT))
    assert refusal(cited('The "setup" wizard'), TEXTS) is None


@pytest.mark.parametrize(
    ("quote", "evidence_id", "reason"),
    [
        ("took me two da ys", "E1", "is not in the text of evidence E1 at revision 3"),
        ("The \u201csetup\u201d wizard", "E1", "is not in the text of evidence E1 at revision 3"),
        ("Onboarding ... is confusing", "E1", "joins passages with an ellipsis"),
        ("Onboarding \u2026 is confusing", "E1", "joins passages with an ellipsis"),
        ("Support answered fast.", "E1", "is in evidence E2, not in evidence E1"),
        ("Onboarding took me three days.", "E1", "is not in the text of evidence E1"),
        (TEXTS["E2"] + " And more words than it has.", "E2", "is longer than the text"),
        ("onboarding took me", "E1", "is not in the text"),
        ("   ", "E1", "is empty"),
    ],
    ids=[
        "whitespace-inside-a-word",
        "smart-quotes",
        "ellipsis",
        "unicode-ellipsis",
        "another-item",
        "previous-revision",
        "longer-than-the-item",
        "case",
        "empty",
    ],
)
def test_each_way_a_quote_misses_is_refused_for_its_reason(
    quote: str, evidence_id: str, reason: str
) -> None:
    found = refusal(cited(quote, evidence_id), TEXTS)
    assert found is not None
    assert reason in found


def test_a_passage_longer_than_the_limit_is_refused_even_when_it_is_in_the_item() -> None:
    long_text = "word " * 100
    found = refusal(Cited("answer.evidence[0]", "E1", 3, long_text), {"E1": long_text})
    assert found is not None
    assert f"at most {MAX_QUOTE_CHARS}" in found


def test_every_citation_of_the_largest_answer_at_the_longest_passage_fits_one_document() -> None:
    """380 citations (20 on the answer, 20 on each of 12 findings and 5 suggestions, 20
    sentiment entries), each passage MAX_QUOTE_CHARS characters of four UTF-8 bytes, with
    the longest answer the contract allows: under Firestore's 1 MiB with room left."""
    passage = "\U0001f600" * MAX_QUOTE_CHARS
    citation = {
        "path": "query_suggestions[4].evidence[19]",
        "evidence_id": "0" * 36,
        "revision": 2**53,
        "quote": passage,
        "start": 20_000,
        "end": 20_000,
        "supported": True,
    }
    text = "\U0001f600" * 2_000
    statement = {"statement": text, "basis": "observed", "evidence": [], "uncertainty": text}
    answer = {
        "answer": statement,
        "findings": [statement] * 12,
        "query_suggestions": [{"query": text, "rationale": text, "excluded_terms": []}] * 5,
        "limitations": [text[:1_000]] * 10,
    }
    size = stored_size({"citations": [citation] * 380, "message": {"answer": answer}})
    assert size < 1_000_000
