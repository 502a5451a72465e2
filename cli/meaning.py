"""A stand-in for meaning: deterministic vectors for the Gemini test server's embeddings.

This is a stand-in for meaning, not a model of it. It knows a few dozen ways of saying a
handful of things that go wrong in coding sessions (a timeout, a refused permission,
failing tests, a missing file, a merge conflict, a rate limit, running out of memory, a
syntax error, the wrong directory, a missing dependency), and nothing else; it exists so
that tests of the patterns (issue #54) can plant paraphrases of one failure and expect
them to cluster, without a model.

A text becomes a vector in four steps: it is lower-cased and split into words; known
phrases ("timed out", "no such file") are read as the concept they name; the other words
lose the stop words and are read through a small synonym table, else reduced by a crude
stem ("failing" and "fails" to "fail"); each concept then adds a Gaussian vector seeded
by a hash of its name (so every process draws the same one), the table's concepts
weighing `CONCEPT_WEIGHT` times more than other words, and the sum is scaled to unit
length. Paraphrases of one failure share its concept and lie near each other; different
failures share at most a stray word and lie apart. Words in no table still count, a little.

`FAILURE_FAMILIES` lists, per failure, paraphrases in different words, for tests that
plant them in a corpus and check that clustering recovers each family.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from functools import lru_cache

CONCEPT_WEIGHT = 3.0
"""How much more a concept from the tables weighs than a word the tables do not know."""

PHRASES: dict[str, str] = {
    "timed out": "timeout",
    "time limit": "timeout",
    "never finished": "timeout",
    "took too long": "timeout",
    "permission denied": "permission",
    "access denied": "permission",
    "not allowed": "permission",
    "not permitted": "permission",
    "read only": "permission",
    "test failed": "failing_tests",
    "tests failed": "failing_tests",
    "tests fail": "failing_tests",
    "test fails": "failing_tests",
    "failing tests": "failing_tests",
    "test suite": "failing_tests",
    "assertion error": "failing_tests",
    "file not found": "missing_file",
    "no such file or directory": "missing_file",
    "no such file": "missing_file",
    "missing file": "missing_file",
    "does not exist": "missing_file",
    "merge conflict": "merge_conflict",
    "conflicting changes": "merge_conflict",
    "conflict markers": "merge_conflict",
    "same lines": "merge_conflict",
    "rate limit": "rate_limit",
    "too many requests": "rate_limit",
    "retry later": "rate_limit",
    "out of memory": "out_of_memory",
    "memory exhausted": "out_of_memory",
    "memory limit": "out_of_memory",
    "not enough memory": "out_of_memory",
    "syntax error": "syntax_error",
    "parse error": "syntax_error",
    "unexpected token": "syntax_error",
    "invalid syntax": "syntax_error",
    "unclosed bracket": "syntax_error",
    "wrong directory": "wrong_location",
    "wrong path": "wrong_location",
    "wrong folder": "wrong_location",
    "working directory": "wrong_location",
    "outside the project": "wrong_location",
    "no module named": "missing_dependency",
    "not installed": "missing_dependency",
    "could not resolve": "missing_dependency",
}
"""Phrases read as one concept, before single words (longest first when they overlap)."""

SYNONYMS: dict[str, str] = {
    "timeout": "timeout",
    "hung": "timeout",
    "hang": "timeout",
    "stalled": "timeout",
    "stall": "timeout",
    "froze": "timeout",
    "frozen": "timeout",
    "deadline": "timeout",
    "forbidden": "permission",
    "eacces": "permission",
    "eperm": "permission",
    "unauthorized": "permission",
    "permission": "permission",
    "sandbox": "permission",
    "assertion": "failing_tests",
    "assertions": "failing_tests",
    "pytest": "failing_tests",
    "enoent": "missing_file",
    "conflict": "merge_conflict",
    "conflicts": "merge_conflict",
    "merge": "merge_conflict",
    "rebase": "merge_conflict",
    "429": "rate_limit",
    "quota": "rate_limit",
    "throttled": "rate_limit",
    "throttling": "rate_limit",
    "oom": "out_of_memory",
    "heap": "out_of_memory",
    "memory": "out_of_memory",
    "syntax": "syntax_error",
    "parser": "syntax_error",
    "compiles": "syntax_error",
    "cwd": "wrong_location",
    "modulenotfounderror": "missing_dependency",
    "importerror": "missing_dependency",
    "dependency": "missing_dependency",
    "package": "missing_dependency",
    "library": "missing_dependency",
}
"""Single words read as the concept they name."""

STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "into",
        "onto",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "then",
        "than",
        "so",
        "because",
        "while",
        "when",
        "after",
        "before",
        "during",
        "until",
        "again",
        "no",
        "not",
        "never",
        "could",
        "would",
        "should",
        "can",
        "cannot",
        "did",
        "do",
        "does",
        "done",
        "had",
        "has",
        "have",
        "having",
        "i",
        "we",
        "they",
        "he",
        "she",
        "you",
        "my",
        "our",
        "their",
        "his",
        "her",
        "your",
        "me",
        "us",
        "them",
        "which",
        "who",
        "what",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "only",
        "own",
        "same",
        "just",
        "also",
        "very",
        "error",
        "errors",
        "fail",
        "failed",
        "fails",
        "failing",
        "failure",
        "problem",
        "issue",
        "agent",
        "session",
        "ran",
        "run",
        "running",
        "got",
        "get",
        "gets",
        "left",
        "stopped",
        "reported",
        "returned",
        "showed",
        "used",
        "missing",
        "went",
        "hit",
        "over",
        "past",
        "longer",
    }
)
"""Words that say nothing about which failure it was (a failure is always a failure)."""

_SUFFIXES = ("ing", "ed", "es", "s", "ly")
SHORTEST_STEM = 3
_LONGEST_PHRASE = max(len(phrase.split()) for phrase in PHRASES)


def words(text: str) -> list[str]:
    """The text's words, lower-cased: runs of letters and digits."""
    return re.findall(r"[a-z0-9]+", text.lower())


def stem(word: str) -> str:
    """A crude stem: the first common suffix taken off when at least three letters remain."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= SHORTEST_STEM:
            return word[: -len(suffix)]
    return word


def _phrase_at(tokens: list[str], start: int) -> tuple[str, int] | None:
    """The longest known phrase starting at `start`: its concept and its length in words."""
    for length in range(min(_LONGEST_PHRASE, len(tokens) - start), 1, -1):
        concept = PHRASES.get(" ".join(tokens[start : start + length]))
        if concept is not None:
            return concept, length
    return None


def concepts(text: str) -> list[tuple[str, float]]:
    """What the text is about: each concept or stray word with its weight, in order."""
    tokens, found, at = words(text), [], 0
    while at < len(tokens):
        phrase = _phrase_at(tokens, at)
        if phrase is not None:
            found.append((phrase[0], CONCEPT_WEIGHT))
            at += phrase[1]
            continue
        word = tokens[at]
        at += 1
        if word in SYNONYMS:
            found.append((SYNONYMS[word], CONCEPT_WEIGHT))
        elif word not in STOP_WORDS:
            found.append((stem(word), 1.0))
    return found


@lru_cache(maxsize=4096)
def _direction(concept: str, dimensions: int) -> tuple[float, ...]:
    """The concept's Gaussian vector, seeded by a hash of its name: the same everywhere."""
    seed = int.from_bytes(hashlib.blake2b(concept.encode(), digest_size=8).digest(), "big")
    draw = random.Random(seed)  # noqa: S311 - a reproducible draw, not a secret
    return tuple(draw.gauss(0.0, 1.0) for _ in range(dimensions))


def unit(vector: list[float]) -> list[float]:
    """`vector` scaled to length 1 (a zero vector stays zero)."""
    length = math.hypot(*vector)
    return [value / length for value in vector] if length else vector


def embedding(text: str, dimensions: int) -> list[float]:
    """The text's unit vector of `dimensions` values; a text with no words at all is read
    as the word "empty", so that every text has a direction."""
    total = [0.0] * dimensions
    for concept, weight in concepts(text) or [("empty", 1.0)]:
        for index, value in enumerate(_direction(concept, dimensions)):
            total[index] += weight * value
    return unit(total)


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine of the angle between two vectors."""
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


FAILURE_FAMILIES: dict[str, tuple[str, ...]] = {
    "timeout": (
        "The test run timed out after ten minutes",
        "The command hung until the timeout killed it",
        "The build stalled and never finished",
        "Execution went past its time limit and was aborted",
        "The process froze waiting for a response and hit the deadline",
    ),
    "permission": (
        "Permission denied writing to /usr/local",
        "The agent was not allowed to modify the protected file",
        "Writing there is forbidden by the sandbox",
        "EACCES when creating the cache folder",
        "Operation not permitted on the read-only filesystem",
    ),
    "failing_tests": (
        "Unit tests failed after the refactor",
        "Three tests fail on the CI pipeline",
        "Assertion error in the integration test suite",
        "The test suite reported failing cases",
        "pytest showed red assertions in test_api",
    ),
    "missing_file": (
        "File not found: config.yaml",
        "No such file or directory when opening the log",
        "The script referenced a missing file",
        "ENOENT while reading the lockfile",
        "The expected output file does not exist",
    ),
    "merge_conflict": (
        "Merge conflict in main.py blocked the commit",
        "Git reported conflicting changes during the rebase",
        "The branch could not merge because both sides edited the same lines",
        "Unresolved conflict markers were left in the file",
        "The rebase stopped on a conflict with upstream",
    ),
    "rate_limit": (
        "Hit the API rate limit",
        "The model answered 429 Too Many Requests",
        "The daily quota was exceeded",
        "Requests were throttled by the provider",
        "Too many requests; the service asked to retry later",
    ),
    "out_of_memory": (
        "The process ran out of memory",
        "The OOM killer terminated the build",
        "Memory exhausted while loading the dataset",
        "Heap allocation failed: not enough memory",
        "The container went over its memory limit",
    ),
    "syntax_error": (
        "Syntax error in the generated Python",
        "Parse error on line 12",
        "Unexpected token in the JSON output",
        "The edited file no longer compiles: invalid syntax",
        "The parser choked on an unclosed bracket",
    ),
    "wrong_location": (
        "Ran the command in the wrong directory",
        "Used the wrong path for the project root",
        "The working directory was not the repository",
        "Changed into the wrong folder before building",
        "Commands ran with a cwd outside the project",
    ),
    "missing_dependency": (
        "ModuleNotFoundError: No module named requests",
        "The package was not installed",
        "The import failed because a dependency was not installed",
        "Could not resolve the npm dependency",
        "The linker could not find the library libssl",
    ),
}
"""Paraphrases of ten failures, five each, in different words: for tests of clustering."""
