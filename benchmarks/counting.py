"""Firestore round trips, counted at the client's gRPC channel."""

from __future__ import annotations

from typing import Any

import grpc
from google.cloud.firestore_v1.types import Write

AGGREGATION_ENTRIES_PER_READ = 1_000
"""Firestore bills an aggregation query one document read per up to 1,000 index entries
it matched (<https://firebase.google.com/docs/firestore/pricing#aggregation_queries>)."""


def _raw(write: Any) -> Any:
    return Write.pb(write) if isinstance(write, Write) else write


def _expiring_document(write: Any) -> bool:
    """Whether the write creates (or sets anew) a document that carries `expires_at`:
    each such document is one TTL delete, billed as a delete, later. An update of an
    existing document (a precondition that it exists, or on its update time) adds none."""
    if write.WhichOneof("operation") != "update" or "expires_at" not in write.update.fields:
        return False
    condition = write.current_document
    kind = condition.WhichOneof("condition_type") if condition is not None else None
    return not (kind == "update_time" or (kind == "exists" and condition.exists))


class _CountedAggregation:
    """An aggregation query's answers, passed on as they come, adding the reads they are
    billed for."""

    def __init__(self, answers: Any, counter: CallCounter) -> None:
        self.answers, self.counter = answers, counter

    def __iter__(self) -> _CountedAggregation:
        return self

    def __next__(self) -> Any:
        answer = next(self.answers)
        for value in answer.result.aggregate_fields.values():
            matched = value.integer_value
            self.counter.reads += max(-(-matched // AGGREGATION_ENTRIES_PER_READ), 1) - 1
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.answers, name)


class CallCounter(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Records the method name of every call the client makes (Firestore's calls are
    unary or server-streaming), the documents each asks to read or write (a batched
    read's documents, a commit's writes, a query's limit: what it may return), what an
    aggregation query is billed (a read per 1,000 index entries it matched, at least
    one), and the documents each commit creates with an `expires_at` (TTL deletes to
    come)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.reads = 0
        self.writes = 0
        self.expiring = 0

    def clear(self) -> None:
        self.calls.clear()
        self.reads = self.writes = self.expiring = 0

    def _count(self, details: Any, request: Any) -> None:
        method = details.method.rsplit("/", 1)[-1]
        self.calls.append(method)
        if method == "BatchGetDocuments":
            self.reads += len(request.documents)
        elif method == "Commit":
            self.writes += len(request.writes)
            self.expiring += sum(_expiring_document(_raw(w)) for w in request.writes)
        elif method == "RunQuery":
            query = request.structured_query
            self.reads += max(query.limit or 0, 1) if "limit" in query else 1
        elif method == "RunAggregationQuery":
            self.reads += 1

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self._count(details, request)
        return continuation(details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self._count(details, request)
        answers = continuation(details, request)
        if details.method.endswith("/RunAggregationQuery"):
            return _CountedAggregation(answers, self)
        return answers


COUNTER = CallCounter()


def count_round_trips() -> None:
    """Every Firestore client built from now on (by an instance made after this call, see
    `shared.instance.renew`) counts on COUNTER."""
    from shared.clients import CHANNEL_INTERCEPTORS

    CHANNEL_INTERCEPTORS.append(COUNTER)
