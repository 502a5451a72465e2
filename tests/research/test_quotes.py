"""A quote is found in the cited item's text by one rule: verbatim after collapsing runs
of whitespace. Each way a model's quote can miss is refused for its own reason."""

from __future__ import annotations

import pytest

from functions.research.quotes import Cited, locate, refusal

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
