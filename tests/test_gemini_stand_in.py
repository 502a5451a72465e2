"""The Gemini stand-in's own scripting, as the tests rely on it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from google.genai import types

from cli.gemini_stand_in import GeminiTestServer
from shared.clients import gemini
from shared.instance import settings
from tests.api import wait_for


def ask_once() -> str | None:
    config = types.GenerateContentConfig(response_mime_type="application/json")
    reply = gemini().models.generate_content(
        model=settings().gemini_model, contents="Say it.", config=config
    )
    return reply.text


def test_a_held_answer_is_sent_only_once_its_gate_opens(gemini_server: GeminiTestServer) -> None:
    gate = gemini_server.held_answer_json({"said": "now"})
    with ThreadPoolExecutor(max_workers=1) as pool:
        asked = pool.submit(ask_once)
        wait_for(lambda: len(gemini_server.requests) == 1)
        assert not asked.done(), "answered before its gate opened"
        gate.open()
        assert asked.result(timeout=30) == '{"said": "now"}'
