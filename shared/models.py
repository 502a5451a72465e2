"""The Gemini model families the project supports, as data: how each is asked.

Every request is shaped by the profile of the configured model: how thinking is
controlled and how little of it the model allows, whether token log-probabilities are
accepted (the Gemini Developer API and Vertex AI differ), whether a temperature should
be sent, the implicit cache's minimum prefix, and the token limits. A model name not in
the table gets `UNKNOWN`: no log-probabilities, no thinking parameter (the request's
`max_output_tokens` still bounds thinking), the model's own temperature.

Read on 2026-12-01 from Google's pages (docs/gemini.md lists them): the models page
(ai.google.dev/gemini-api/docs/models), the deprecations page
(ai.google.dev/gemini-api/docs/deprecations), thinking (ai.google.dev/gemini-api/docs/thinking
and the Vertex AI thinking page), context caching (ai.google.dev/gemini-api/docs/caching) and
the model pages on Vertex AI.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Backend(StrEnum):
    DEVELOPER = "developer"
    """The Gemini Developer API (an API key)."""
    VERTEX = "vertex"
    """Vertex AI (Google Cloud credentials)."""


class Control(StrEnum):
    LEVEL = "level"
    """`thinkingConfig.thinkingLevel` (Gemini 3)."""
    BUDGET = "budget"
    """`thinkingConfig.thinkingBudget` in tokens (Gemini 2.5)."""
    NONE = "none"
    """No thinking parameter is sent: the model's default applies."""


@dataclass(frozen=True)
class Thinking:
    control: Control
    levels: tuple[str, ...] = ()
    """Accepted `thinkingLevel` values, least thinking first."""
    default_level: str | None = None
    budget_range: tuple[int, int] | None = None
    """Accepted `thinkingBudget` values other than 0 (off) and -1 (dynamic)."""
    can_disable: bool = False
    """Whether `thinkingBudget: 0` turns thinking off."""
    thinks_unasked: bool = True
    """Whether a budget-controlled model thinks (dynamically) when a request sets no budget."""

    @property
    def budgets(self) -> tuple[int, int]:
        """The accepted budget range of a budget-controlled model."""
        if self.budget_range is None:
            raise ValueError("a budget-controlled model's profile names its budget range")
        return self.budget_range


@dataclass(frozen=True)
class ModelProfile:
    name: str
    family: str
    stage: str
    """"ga" or "preview"."""
    thinking: Thinking
    logprobs: frozenset[Backend]
    """Where `responseLogprobs` is accepted; elsewhere it is refused with a 400."""
    send_temperature: bool
    """False where Google's guidance is to keep the default (1.0) for the family."""
    cache_min_tokens: int
    """The shortest prompt prefix the implicit cache serves, in tokens."""
    input_limit: int
    output_limit: int
    retired: frozenset[Backend] = frozenset()
    """Where the name no longer answers (404 NOT_FOUND)."""

    def served_by(self, backend: Backend) -> bool:
        return backend not in self.retired

    def least_thinking(self) -> dict[str, object]:
        """The `thinkingConfig` for the least thinking this model allows."""
        thinking = self.thinking
        if thinking.control == Control.LEVEL:
            return {"thinking_level": thinking.levels[0]}
        if thinking.control == Control.BUDGET:
            return {"thinking_budget": 0 if thinking.can_disable else thinking.budgets[0]}
        return {}

    def bounded_thinking(self, allowance: int) -> dict[str, object]:
        """The `thinkingConfig` for an analysis: a token budget where the model takes one,
        else the lowest level that reasons (never the minimal one); `max_output_tokens`
        (allowance plus the answer's) is the hard bound either way."""
        thinking = self.thinking
        if thinking.control == Control.LEVEL:
            reasoning = [level for level in thinking.levels if level != "MINIMAL"]
            return {"thinking_level": reasoning[0]}
        if thinking.control == Control.BUDGET:
            low, high = thinking.budgets
            return {"thinking_budget": min(max(allowance, low), high)}
        return {}

    def summary(self, backend: Backend) -> str:
        """One line for `evidencia doctor`."""
        thinking = self.thinking
        if thinking.control == Control.LEVEL:
            how = f"thinking_level {'/'.join(thinking.levels)} (default {thinking.default_level})"
        elif thinking.control == Control.BUDGET:
            low, high = thinking.budget_range or (0, 0)
            off = ", 0 turns it off" if thinking.can_disable else ", cannot be off"
            how = f"thinking_budget {low}..{high}{off}"
        else:
            how = "thinking left to the model, bounded by max_output_tokens"
        logprobs = "accepted" if backend in self.logprobs else "not accepted"
        served = "" if self.served_by(backend) else f"; RETIRED on the {backend} backend"
        return (
            f"{self.name} ({self.family}, {self.stage}): {how}; logprobs {logprobs}; "
            f"implicit cache from {self.cache_min_tokens} tokens{served}"
        )


_LEVELS_FROM_LOW = Thinking(Control.LEVEL, ("LOW", "MEDIUM", "HIGH"), "MEDIUM")
_LEVELS_FROM_MINIMAL = Thinking(Control.LEVEL, ("MINIMAL", "LOW", "MEDIUM", "HIGH"), "MEDIUM")
_MILLION = 1_048_576


def _gemini_3(name: str, family: str, thinking: Thinking, stage: str = "ga") -> ModelProfile:
    return ModelProfile(
        name=name,
        family=family,
        stage=stage,
        thinking=thinking,
        logprobs=frozenset(),
        send_temperature=False,
        cache_min_tokens=4_096,
        input_limit=_MILLION,
        output_limit=65_536,
    )


def _gemini_2_5(
    name: str,
    family: str,
    budget: tuple[int, int],
    can_disable: bool,
    retired: bool,
    thinks_unasked: bool = True,
) -> ModelProfile:
    return ModelProfile(
        name=name,
        family=family,
        stage="ga",
        thinking=Thinking(
            Control.BUDGET,
            budget_range=budget,
            can_disable=can_disable,
            thinks_unasked=thinks_unasked,
        ),
        logprobs=frozenset({Backend.VERTEX}),
        send_temperature=True,
        cache_min_tokens=2_048,
        input_limit=_MILLION,
        output_limit=65_536,
        retired=frozenset({Backend.DEVELOPER}) if retired else frozenset(),
    )


PROFILES: dict[str, ModelProfile] = {
    profile.name: profile
    for profile in (
        _gemini_3("gemini-3.8-flash", "Gemini 3.8 Flash", _LEVELS_FROM_LOW),
        _gemini_3("gemini-3.7-flash", "Gemini 3.7 Flash", _LEVELS_FROM_LOW),
        _gemini_3("gemini-3.6-flash", "Gemini 3.6 Flash", _LEVELS_FROM_MINIMAL),
        _gemini_3(
            "gemini-3.5-flash-lite",
            "Gemini 3.5 Flash-Lite",
            Thinking(Control.LEVEL, ("MINIMAL", "LOW", "MEDIUM", "HIGH"), "MINIMAL"),
        ),
        _gemini_3(
            "gemini-3.1-flash-lite",
            "Gemini 3.1 Flash-Lite",
            Thinking(Control.LEVEL, ("MINIMAL", "LOW", "MEDIUM", "HIGH"), "HIGH"),
        ),
        _gemini_3(
            "gemini-3.1-pro-preview",
            "Gemini 3.1 Pro",
            Thinking(Control.LEVEL, ("LOW", "MEDIUM", "HIGH"), "HIGH"),
            stage="preview",
        ),
        _gemini_2_5("gemini-2.5-flash", "Gemini 2.5 Flash", (1, 24_576), True, retired=True),
        _gemini_2_5("gemini-2.5-pro", "Gemini 2.5 Pro", (128, 32_768), False, retired=True),
        _gemini_2_5(
            "gemini-2.5-flash-lite",
            "Gemini 2.5 Flash-Lite",
            (512, 24_576),
            True,
            retired=False,
            thinks_unasked=False,
        ),
    )
}

DEFAULT_MODEL = "gemini-3.8-flash"
"""Google's newest generally available Flash model on 2026-12-01: research answers and
Psychologist analyses, which reason over long inputs and must cite them exactly."""
ANSWER_MODEL = "gemini-3.5-flash-lite"
"""AgentConnect's default: each question is a one-value answer at the least thinking, which
Flash-Lite gives at two fifths of Flash's input price and two thirds of its output price."""

UNKNOWN = ModelProfile(
    name="",
    family="not in the table",
    stage="unknown",
    thinking=Thinking(Control.NONE),
    logprobs=frozenset(),
    send_temperature=False,
    cache_min_tokens=4_096,
    input_limit=_MILLION,
    output_limit=65_536,
)
"""What an unlisted model is assumed to take: nothing it might refuse."""


def profile_of(model: str) -> ModelProfile:
    """The profile of `model` (`models/` prefix allowed); `UNKNOWN` for an unlisted name."""
    name = model.removeprefix("models/")
    return PROFILES.get(name) or replace(UNKNOWN, name=name)
