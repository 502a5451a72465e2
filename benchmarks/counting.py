"""Firestore round trips, counted at the client's gRPC channel."""

from __future__ import annotations

from typing import Any

import grpc


class CallCounter(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Records the method name of every call the client makes (Firestore's calls are
    unary or server-streaming), and the documents each asks to read or write: a batched
    read's documents, a commit's writes, a query's limit (what it may return)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.reads = 0
        self.writes = 0

    def clear(self) -> None:
        self.calls.clear()
        self.reads = self.writes = 0

    def _count(self, details: Any, request: Any) -> None:
        method = details.method.rsplit("/", 1)[-1]
        self.calls.append(method)
        if method == "BatchGetDocuments":
            self.reads += len(request.documents)
        elif method == "Commit":
            self.writes += len(request.writes)
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
        return continuation(details, request)


COUNTER = CallCounter()


def count_round_trips() -> None:
    """Every Firestore client built from now on (by an instance made after this call, see
    `shared.instance.renew`) counts on COUNTER."""
    from shared.clients import CHANNEL_INTERCEPTORS

    CHANNEL_INTERCEPTORS.append(COUNTER)
