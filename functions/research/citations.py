"""Where an answer cites evidence: every `{evidence_id, revision}` with its path."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from functions.research.documents import (
    Answer,
    EvidenceRef,
    QuerySuggestion,
    SentimentEntry,
    Statement,
)


def _nested(
    section: str, entries: Sequence[Statement | QuerySuggestion]
) -> Iterator[tuple[str, EvidenceRef]]:
    for i, entry in enumerate(entries):
        for j, ref in enumerate(entry["evidence"]):
            yield f"{section}[{i}].evidence[{j}]", ref


def references(answer: Answer) -> Iterator[tuple[str, EvidenceRef | SentimentEntry]]:
    for index, ref in enumerate(answer["answer"]["evidence"]):
        yield f"answer.evidence[{index}]", ref
    yield from _nested("findings", answer["findings"])
    yield from _nested("query_suggestions", answer["query_suggestions"])
    for index, entry in enumerate(answer["sentiment"]):
        yield f"sentiment[{index}]", entry


def cited_ids(answer: Answer) -> set[str]:
    return {ref["evidence_id"] for _, ref in references(answer)}
