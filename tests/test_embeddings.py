"""Embeddings for the patterns (#54): `shared.gemini.embed` through the real google-genai
client against the Gemini test server, the server's embedding endpoints as Google
documents them, and the meaning stand-in (`cli.meaning`) the server answers with."""

from __future__ import annotations

import itertools
import math
from datetime import timedelta
from pathlib import Path

import pytest
from google.genai import errors, types

from cli import meaning
from cli.gemini_stand_in import EMBEDDING_BATCH_LIMIT, GeminiTestServer
from cli.stand_in import tokens_of
from shared.clients import gemini
from shared.codes import ProviderFailure
from shared.config import EMBEDDING_MODEL
from shared.gemini import EMBEDDING_TASK, GeminiError, embed
from shared.retention import utcnow
from tests.api import Configure
from tests.gemini import use_vertex

PARAPHRASES = [text for family in meaning.FAILURE_FAMILIES.values() for text in family]
PINNED_FIRST_VALUE = -0.06886
"""The first of "timed out"'s 768 values, as every process draws it."""
FAMILY_OF = {text: name for name, family in meaning.FAILURE_FAMILIES.items() for text in family}


def sentences(count: int) -> list[str]:
    """`count` failure sentences, each one different: the paraphrases, numbered."""
    pool = itertools.cycle(PARAPHRASES)
    return [f"{next(pool)} (session {index})" for index in range(count)]


def ask(texts: list[str], **config: object) -> types.EmbedContentResponse:
    """The embedding model asked directly through the library, as `embed` asks it."""
    options = {"task_type": EMBEDDING_TASK, "output_dimensionality": 768, **config}
    return gemini().models.embed_content(
        model=EMBEDDING_MODEL,
        contents=texts,
        config=types.EmbedContentConfig.model_validate(options),
    )


# -- embed, through google-genai ---------------------------------------------------------


def test_embed_returns_a_unit_vector_of_the_chosen_size_per_text_in_calls_of_at_most_100(
    gemini_server: GeminiTestServer,
) -> None:
    texts = sentences(250)

    embedded = embed(texts)

    assert [len(r.texts) for r in gemini_server.embedding_requests] == [100, 100, 50]
    assert {r.method for r in gemini_server.embedding_requests} == {"batchEmbedContents"}
    sent = [r for request in gemini_server.embedding_requests for r in request.items]
    assert {(r["taskType"], r["outputDimensionality"]) for r in sent} == {("CLUSTERING", 768)}
    assert embedded.model == EMBEDDING_MODEL == "gemini-embedding-001"
    assert len(embedded.vectors) == len(texts)
    assert {len(vector) for vector in embedded.vectors} == {768}
    assert all(math.isclose(math.hypot(*v), 1.0, abs_tol=1e-9) for v in embedded.vectors)
    for text, vector in zip(texts, embedded.vectors, strict=True):
        assert vector == pytest.approx(meaning.embedding(text, 768), abs=1e-9), "out of order"
    assert embedded.tokens_estimated, "the Developer API reports no count"
    assert embedded.tokens == sum(tokens_of(text) for text in texts)


def test_the_configured_model_and_size_are_what_is_asked_for(
    gemini_server: GeminiTestServer, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_EMBEDDING_DIMENSIONS="1536")

    embedded = embed(["The build timed out", "Permission denied"])

    (request,) = gemini_server.embedding_requests
    assert (request.model, request.dimensions) == (EMBEDDING_MODEL, [1536, 1536])
    assert {len(vector) for vector in embedded.vectors} == {1536}
    assert all(math.isclose(math.hypot(*v), 1.0, abs_tol=1e-9) for v in embedded.vectors)

    configure(PSYCHOLOGIST_EMBEDDING_MODEL="gemini-3.8-flash")
    with pytest.raises(GeminiError) as refused:
        embed(["The build timed out"])
    assert refused.value.kind == ProviderFailure.PROVIDER_UNAVAILABLE
    assert "404 NOT_FOUND" in refused.value.detail
    assert [r.status for r in gemini_server.embedding_requests] == [200, 404], "tried again"


def test_on_vertex_one_text_is_asked_with_embed_content_and_its_tokens_are_reported(
    gemini_server: GeminiTestServer, configure: Configure, tmp_path: Path
) -> None:
    use_vertex(configure, gemini_server, tmp_path, "gemini-3.8-flash")

    embedded = embed(["The test suite reported failing cases"])

    (request,) = gemini_server.embedding_requests
    assert (request.backend, request.method) == ("vertex", "embedContent")
    assert (request.task_types, request.dimensions) == (["CLUSTERING"], [768])
    assert not embedded.tokens_estimated
    assert embedded.tokens == tokens_of("The test suite reported failing cases")
    assert math.isclose(math.hypot(*embedded.vectors[0]), 1.0, abs_tol=1e-9)


def test_a_passing_failure_is_tried_again_and_a_refusal_is_not(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.fail_embedding(503)
    assert len(embed(["Hit the API rate limit"]).vectors) == 1
    assert [r.status for r in gemini_server.embedding_requests] == [503, 200]

    gemini_server.reset()
    with pytest.raises(GeminiError) as refused:
        embed(["The build stalled", ""])
    assert refused.value.kind == ProviderFailure.PROVIDER_UNAVAILABLE
    assert refused.value.detail.startswith("embedding texts 1 to 2: Gemini answered HTTP 400")
    assert "must not be empty" in refused.value.detail
    assert len(gemini_server.embedding_requests) == 1


def test_no_call_is_made_without_credentials_or_past_the_deadline(
    gemini_server: GeminiTestServer, configure: Configure
) -> None:
    with pytest.raises(GeminiError) as late:
        embed(["The build stalled"], deadline=utcnow() - timedelta(seconds=1))
    assert late.value.kind == ProviderFailure.PROVIDER_UNAVAILABLE
    assert "deadline" in late.value.detail

    configure(GEMINI_API_KEY=None, GOOGLE_API_KEY=None)
    with pytest.raises(GeminiError) as unconfigured:
        embed(["The build stalled"])
    assert unconfigured.value.kind == ProviderFailure.NOT_CONFIGURED
    assert gemini_server.embedding_requests == []


# -- the test server's embedding endpoints -----------------------------------------------


def test_the_developer_api_is_sent_batch_embed_contents_even_for_one_text(
    gemini_server: GeminiTestServer,
) -> None:
    answer = ask(["No such file or directory"], output_dimensionality=3072)

    (request,) = gemini_server.embedding_requests
    assert (request.method, request.backend, request.texts) == (
        "batchEmbedContents",
        "developer",
        ["No such file or directory"],
    )
    assert answer.embeddings is not None
    values = answer.embeddings[0].values or []
    assert len(values) == 3072
    assert math.isclose(math.hypot(*values), 1.0, abs_tol=1e-9), "the full size is normalised"
    cut = (ask(["No such file or directory"]).embeddings or [])[0].values or []
    assert cut == values[:768], "a smaller size is the full vector cut"
    assert math.hypot(*cut) < 0.9, "and is not normalised"


def test_too_many_texts_in_one_batch_are_refused_with_googles_error(
    gemini_server: GeminiTestServer,
) -> None:
    with pytest.raises(errors.APIError) as refused:
        ask(sentences(EMBEDDING_BATCH_LIMIT + 1))
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert "at most 100 requests can be in one batch" in str(refused.value.message)
    assert len(ask(sentences(EMBEDDING_BATCH_LIMIT)).embeddings or []) == 100


@pytest.mark.parametrize(
    ("texts", "config", "problem"),
    [
        (["Parse error on line 12", ""], {}, "requests[1].content"),
        (["Parse error on line 12"], {"output_dimensionality": 4096}, "output_dimensionality"),
        (["Parse error on line 12"], {"output_dimensionality": 64}, "output_dimensionality"),
        (["Parse error on line 12"], {"task_type": "GROUPING"}, "task_type"),
    ],
)
def test_a_request_google_refuses_is_answered_400(
    gemini_server: GeminiTestServer, texts: list[str], config: dict[str, object], problem: str
) -> None:
    with pytest.raises(errors.APIError) as refused:
        ask(texts, **config)
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert problem in str(refused.value.message)
    assert [r.status for r in gemini_server.embedding_requests] == [400]


def test_a_model_that_does_not_embed_is_not_found_as_the_generate_path_answers(
    gemini_server: GeminiTestServer,
) -> None:
    with pytest.raises(errors.APIError) as embedding:
        gemini().models.embed_content(model="gemini-3.8-flash", contents=["Parse error"])
    with pytest.raises(errors.APIError) as generating:
        gemini().models.generate_content(model="gemini-embedding-9", contents="Parse error")
    assert (embedding.value.code, embedding.value.status) == (404, "NOT_FOUND")
    assert (generating.value.code, generating.value.status) == (404, "NOT_FOUND")
    assert "is not supported for batchEmbedContents" in str(embedding.value.message)


def test_a_scripted_failure_is_answered_once_with_googles_body(
    gemini_server: GeminiTestServer,
) -> None:
    gemini_server.fail_embedding(429)
    with pytest.raises(errors.APIError) as refused:
        ask(["Quota exceeded"])
    assert (refused.value.code, refused.value.status) == (429, "RESOURCE_EXHAUSTED")
    details = refused.value.details["error"]["details"]
    assert any(d["@type"].endswith("RetryInfo") for d in details)
    assert len(ask(["Quota exceeded"]).embeddings or []) == 1


# -- the meaning stand-in ----------------------------------------------------------------


def cosines(texts: list[str]) -> dict[tuple[str, str], float]:
    vectors = {text: meaning.embedding(text, 768) for text in texts}
    return {
        (a, b): meaning.cosine(vectors[a], vectors[b]) for a, b in itertools.combinations(texts, 2)
    }


@pytest.mark.pure
def test_the_families_are_paraphrases_in_different_words() -> None:
    assert len(meaning.FAILURE_FAMILIES) >= 8
    assert all(len(family) >= 5 for family in meaning.FAILURE_FAMILIES.values())
    assert len(set(PARAPHRASES)) == len(PARAPHRASES)
    for family in meaning.FAILURE_FAMILIES.values():
        for a, b in itertools.combinations(family, 2):
            assert set(meaning.words(a)) != set(meaning.words(b))


@pytest.mark.pure
def test_vectors_are_unit_length_of_the_size_asked_and_the_same_in_every_process() -> None:
    for size in (128, 768, 3072):
        vector = meaning.embedding("The build timed out", size)
        assert len(vector) == size
        assert math.isclose(math.hypot(*vector), 1.0, abs_tol=1e-12)
    assert meaning.embedding("", 8) == meaning.embedding("  ", 8), "an empty text has a direction"
    # Seeded by a hash of the concept's name, not by Python's salted hash(): pinned.
    assert round(meaning.embedding("timed out", 768)[0], 6) == PINNED_FIRST_VALUE


@pytest.mark.pure
def test_paraphrases_of_one_failure_lie_nearer_than_any_two_different_failures() -> None:
    pairs = cosines(PARAPHRASES)
    within = [c for (a, b), c in pairs.items() if FAMILY_OF[a] == FAMILY_OF[b]]
    across = [c for (a, b), c in pairs.items() if FAMILY_OF[a] != FAMILY_OF[b]]

    assert min(within) > max(across)
    assert sum(within) / len(within) >= 0.8
    assert min(within) >= 0.7
    assert max(across) <= 0.3
