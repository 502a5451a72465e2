"""Where an answer cites evidence: every `{evidence_id, revision}` with its path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def references(answer: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for index, ref in enumerate(answer["answer"]["evidence"]):
        yield f"answer.evidence[{index}]", ref
    for section in ("findings", "query_suggestions"):
        for i, entry in enumerate(answer[section]):
            for j, ref in enumerate(entry["evidence"]):
                yield f"{section}[{i}].evidence[{j}]", ref
    for index, ref in enumerate(answer["sentiment"]):
        yield f"sentiment[{index}]", ref


def cited_ids(answer: dict[str, Any]) -> set[str]:
    return {ref["evidence_id"] for _, ref in references(answer)}
