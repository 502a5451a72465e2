"""The instance's clients: one Firestore and one Gemini client, built on first use from
its settings and kept by the instance (`shared.instance`), so a new instance (other
settings: the emulator, the Gemini test server) builds new ones.
"""

from __future__ import annotations

import os
import ssl
from functools import cache
from typing import TYPE_CHECKING, Any

import grpc
from google.cloud import firestore

from shared.instance import Instance, instance
from shared.wire import EVENT_HOOKS

if TYPE_CHECKING:
    from google import genai


STREAMED_QUERIES = frozenset({"run_query", "run_aggregation_query"})
QUERY_TIMEOUT_S = 60.0
"""A streamed query may take this long to deliver all its results."""


CHANNEL_INTERCEPTORS: list[
    grpc.UnaryUnaryClientInterceptor | grpc.UnaryStreamClientInterceptor
] = []
"""gRPC interceptors every Firestore client built from now on sends its calls through (the
bench counts round trips with one). Set before `db()` is first called, or reset clients."""


class _InterceptedClient(firestore.Client):
    """A Firestore client whose emulator channel passes through `CHANNEL_INTERCEPTORS`:
    the library builds its channel in this one method and offers no other hook."""

    def _emulator_channel(self, transport: Any) -> Any:
        channel = super()._emulator_channel(transport)  # type: ignore[no-untyped-call]
        return grpc.intercept_channel(channel, *CHANNEL_INTERCEPTORS)


def firestore_client(project: str | None) -> firestore.Client:
    """A plain client for `project`, through `CHANNEL_INTERCEPTORS` when there are any."""
    kind = _InterceptedClient if CHANNEL_INTERCEPTORS else firestore.Client
    client: firestore.Client = kind(project=project)
    return client


def db() -> firestore.Client:
    return instance().get(build_firestore)


def build_firestore(owner: Instance) -> firestore.Client:
    client = firestore_client(owner.settings.project_id)
    _bound_every_call(client, owner.settings.firestore_timeout_s)
    return client


def _bound_every_call(client: firestore.Client, seconds: float) -> None:
    """Make every Firestore call give up after `seconds`, its retries included (a query
    may stream its results for longer).

    The library's defaults retry an unreachable Firestore for 60 to 300 s per call, and
    the calls a transaction makes (begin, commit, rollback) take no timeout argument, so
    the defaults of the transport's wrapped methods are bounded here, once per client."""
    transport = client._firestore_api.transport
    for method, wrapped in transport._wrapped_methods.items():
        attempt_s = (
            max(seconds, QUERY_TIMEOUT_S) if method.__name__ in STREAMED_QUERIES else seconds
        )
        if wrapped._retry is not None:
            wrapped._retry = wrapped._retry.with_timeout(seconds)
        wrapped._timeout = attempt_s


def gemini() -> genai.Client:
    """The instance's one Gemini client (concurrent first calls, a worker's parallel chunk
    calls, build it once)."""
    return instance().get(_gemini)


def _gemini(owner: Instance) -> genai.Client:
    from google import genai
    from google.genai import types

    config = owner.settings
    # One try per library call: `shared.gemini` makes the tries, bounded by the job's time.
    options = types.HttpOptions(
        base_url=config.gemini_base_url,
        timeout=config.gemini_timeout_ms,
        retry_options=types.HttpRetryOptions(attempts=1),
        client_args={"event_hooks": EVENT_HOOKS},
    )
    if config.gemini_use_vertex:
        return genai.Client(
            vertexai=True,
            project=config.project_id,
            location=config.gemini_location,
            http_options=options,
        )
    # Vertex keeps the library's own contexts (they may carry a client certificate).
    options.client_args = {**(options.client_args or {}), "verify": tls_context()}
    options.async_client_args = {"verify": tls_context(), "ssl": tls_context()}
    return genai.Client(api_key=config.gemini_api_key, http_options=options)


@cache
def tls_context() -> ssl.SSLContext:
    """The process's one TLS context for Gemini API clients, as the library builds its own
    (its CA bundle, `SSL_CERT_FILE`, `SSL_CERT_DIR`). Left to itself the library reads the
    CA bundle twice per client, which costs more CPU than a model call; an instance built
    again (new settings) reuses this one."""
    import certifi

    return ssl.create_default_context(
        cafile=os.environ.get("SSL_CERT_FILE", certifi.where()),
        capath=os.environ.get("SSL_CERT_DIR"),
    )
