"""Lazily built, cached clients: one Firestore and one Gemini client per instance.

The builders are the one seam for tests: they read settings (which point at the
emulator and at the Gemini protocol test server) and `reset_clients()` drops the cache.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from google.cloud import firestore

from shared.config import settings

if TYPE_CHECKING:
    from google import genai


@cache
def db() -> firestore.Client:
    return firestore.Client(project=settings().project_id)


@cache
def gemini() -> genai.Client:
    from google import genai
    from google.genai import types

    config = settings()
    retry = types.HttpRetryOptions(
        attempts=config.gemini_attempts,
        initial_delay=config.gemini_initial_delay_s,
        max_delay=max(config.gemini_initial_delay_s * 8, 0.01),
        jitter=0.0 if config.gemini_initial_delay_s < 0.1 else 1.0,
    )
    options = types.HttpOptions(
        base_url=config.gemini_base_url,
        timeout=config.gemini_timeout_ms,
        retry_options=retry,
    )
    if config.gemini_use_vertex:
        return genai.Client(http_options=options)
    return genai.Client(api_key=config.gemini_api_key, http_options=options)


def reset_clients() -> None:
    from shared.auth import clear_auth_cache

    clear_auth_cache()
    settings.cache_clear()
    db.cache_clear()
    gemini.cache_clear()
