"""Firestore round trips, counted at the client's gRPC channel."""

from __future__ import annotations

from typing import Any

import grpc


class CallCounter(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Records the method name of every call the client makes (Firestore's calls are
    unary or server-streaming)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _count(self, details: Any) -> None:
        self.calls.append(details.method.rsplit("/", 1)[-1])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self._count(details)
        return continuation(details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self._count(details)
        return continuation(details, request)


COUNTER = CallCounter()


def count_round_trips() -> None:
    """Every Firestore client built from now on (after `reset_clients`) counts on COUNTER."""
    from shared.clients import CHANNEL_INTERCEPTORS

    CHANNEL_INTERCEPTORS.append(COUNTER)
