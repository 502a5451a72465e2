"""The loop's documents: an outcome record (`OutcomeRecord`: how the session ended, the
Psychologist's `Outcome`; the choice AgentConnect froze for it, `ChoiceRecord` under
`selection`; the pattern it joined), a trial and what a session start needs of it, and an
instructions version. No user or model text in an outcome record: ids, the target, which
rule held, each step's answer value and probability, counts and costs.

No `from __future__ import annotations` here, as in the APIs' documents modules."""

from datetime import datetime
from enum import StrEnum
from typing import Any, NotRequired

from typing_extensions import TypedDict

SIGNAL_KINDS = ("task_reopened", "tool_error_repeated", "last_events_before_abnormal_end")
"""The signal kinds the Psychologist counts in a log (its `signals` module finds them)."""


class StepAnswer(TypedDict):
    type: str
    value: bool | str
    probability: float


class ChoiceRecord(TypedDict):
    """`projects/{p}/outcomes/{s}-{a}.selection`: how the session's target was chosen."""

    org_id: str
    agent_id: str
    seq: int
    selection_version: int
    started_at: datetime
    target_key: str
    target: dict[str, Any]
    route: str
    """Which rule held on which answer (`initial/1:true`), `default`, `fallback`, or
    `explored` when the target was drawn."""
    explored: bool
    propensity: float
    """The probability the selection gave this session the target it got."""
    candidates: int
    """How many targets an exploring session drew among (1 / it is its draw's chance)."""
    candidate_keys: list[str]
    """Those targets' keys, for an exploring session (else empty): a policy that would
    have given a target outside them cannot be judged on this session."""
    answers: dict[str, StepAnswer]
    """Every step's answer, by step id: the steps walked, or every step when it explored."""
    trial_arms: list[str]
    """`{trial id}:{arm}` for each running trial the session was assigned to."""
    instructions_version: int | None
    """The agent's instructions version the session was served at its start; None when
    it had none."""
    started_by: NotRequired[str]
    """`launch`, `hook` (started by hand: its target_key is `HAND_STARTED_KEY`, so no
    target's count holds it) or `api`."""


class Link(TypedDict):
    """Where an agent's sessions are logged: a Psychologist project and the agent name
    its events carry, under the same session ids."""

    project_id: str
    agent: str


class OutcomeSource(Link):
    """`orgs/{o}/agents/{a}.outcome_source`: the link, and who made it (a report reads
    through the link only while its author may still view the project)."""

    created_by: str
    created_at: datetime


GENERIC_KINDS = frozenset({"last_events_before_abnormal_end"})
"""Signal kinds every abnormal session shows whatever went wrong: a hypothesis is judged
on the kinds specific to it, never on these."""


class Arm(StrEnum):
    TREATMENT = "treatment"
    CONTROL = "control"


class TrialStatus(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"


class RunningTrial(TypedDict):
    """`orgs/{o}/agents/{a}.running_trials.{t}`: what a session start needs of a trial."""

    project_id: str
    hypothesis_id: str | None
    """None for a pattern's trial (`pattern_id` names it)."""
    pattern_id: NotRequired[str | None]
    share: float
    sugestao: str
    max_sessions: int | None
    assigned: int


class StopCause(StrEnum):
    """Who stopped a trial when no person did."""

    GUARDRAIL = "guardrail"
    """Its verdict read `worse`, or its one-sided test found harm: treatment stops at once."""
    AUTO_ADOPT = "autoAdopt"
    """Started with `autoAdopt`, its verdict read `improved`: its suggestion was adopted."""


class Trial(TypedDict):
    """`projects/{p}/trials/{t}`: a randomised trial of an accepted hypothesis's or
    pattern's suggestion, with what calibration counts of a hypothesis's (its confidence,
    agent and creation; the verdict stored when it stops)."""

    id: str
    project_id: str
    hypothesis_id: str | None
    """None for a pattern's trial."""
    pattern_id: NotRequired[str | None]
    """Set for a pattern's trial, whose verdict is on the pattern's own rate per arm."""
    org_id: str
    agent_id: str
    share: float
    max_sessions: int | None
    status: TrialStatus
    started_at: datetime
    started_by: str
    stopped_at: datetime | None
    stopped_by: NotRequired[str]
    """A person's id, or a `StopCause`."""
    stop_reason: NotRequired[str | None]
    agenteAlvo: str
    confiancaPercent: NotRequired[float]
    """A hypothesis's: a pattern's trial has none, so calibration never counts it."""
    createdAt: NotRequired[datetime]
    """The hypothesis's creation: calibration's window."""
    signal_kinds: list[str]
    sugestao: NotRequired[str]
    auto_adopt: NotRequired[bool]
    """Adopt the suggestion the first time the verdict reads `improved`."""
    adopted_as: NotRequired[int | None]
    """The instructions version the suggestion became."""
    resolved: NotRequired[bool]
    """A pattern's trial that read `improved` and resolved its pattern."""
    verdict: str | None
    """The randomized verdict when it stopped (None while running)."""
    mismatch_flagged_at: NotRequired[datetime]
    """When a read first found a sample-ratio mismatch: the flag is latched from then on,
    so no verdict is served after it rose, even if the counts would lower it again."""


class TrialOrigin(TypedDict):
    """The trial an instructions version was adopted from, and what it tested."""

    trial_id: str
    hypothesis_id: str | None
    pattern_id: str | None


class StoredInstructions(TypedDict):
    """`orgs/{o}/agents/{a}/instructions/{version}`: every version, kept and never changed;
    the current one is copied on the agent document (`instructions`)."""

    version: int
    text: str
    created_at: datetime
    created_by: str
    reason: str | None
    origin: TrialOrigin | None
    """Set when a trial's suggestion was adopted; None for a person's edit or a rollback."""
    rolled_back_from: int | None
    """The version whose text a rollback took again; None otherwise."""


class Spent(TypedDict):
    """What a session's telemetry says it spent, as its outcome records keep it: totals and
    their squares, which the selection report sums into a mean and its interval."""

    usage_reported: int
    """1 when the session's telemetry reported its tokens (then the four below are set)."""
    tokens: NotRequired[int]
    """The session's input and output tokens (cached input included), as its telemetry
    reported them (`sessions.usage`, else `metered`)."""
    tokens_sq: NotRequired[float]
    tokens_cu: NotRequired[float]
    tokens_positive: NotRequired[float]
    """1 when `tokens` is above 0; then `log_tokens` and its square are set."""
    log_tokens: NotRequired[float]
    log_tokens_sq: NotRequired[float]
    cost_reported: NotRequired[int]
    """1 when the telemetry also reported a cost (then the cost fields are set): a cost
    never reported is missing, never $0, and leaves the mean cost."""
    cost_usd: NotRequired[float]
    cost_usd_sq: NotRequired[float]
    cost_usd_cu: NotRequired[float]
    cost_usd_positive: NotRequired[float]
    log_cost_usd: NotRequired[float]
    log_cost_usd_sq: NotRequired[float]


class Outcome(Spent):
    """The Psychologist's half of an outcome record: what one agent's part of an ended
    session came to, kept as long as hypotheses (the log is gone after a day), with no user
    or model text: how the session ended and why, the agent's event count, its signals by
    kind, the analysis and the hypotheses about the agent it produced."""

    project_id: str
    session_id: str
    agent: str
    ended_as: str
    """The session's state at its end: `closed` or `closed_abnormally`."""
    cause: str | None
    ended_at: datetime | None
    event_count: int
    signals: dict[str, int]
    """How many signals of each kind (`task_reopened`, `tool_error_repeated`,
    `last_events_before_abnormal_end`) the agent's events show."""
    signal_kinds: list[str]
    """The kinds the agent's signals are of: what an effect's count of the sessions that
    show any cited kind filters on (`array-contains-any`)."""
    abnormal_end: int
    """1 when the session ended abnormally, else 0."""
    analysis_id: str
    """The latest analysis of the session."""
    hypothesis_ids: NotRequired[list[str]]
    """The hypotheses about the agent that any analysis of the session produced (absent
    while there are none)."""
    model_versions: NotRequired[list[str]]
    """The Gemini model versions that answered those analyses: the hypotheses' provenance
    (absent while no model answered)."""
    analysed_at: datetime
    expires_at: datetime


class OutcomeRecord(Outcome, total=False):
    """`projects/{p}/outcomes/{s}-{a}`, whole, as read once its session has ended: each
    half lands on its own, in either order (`outcomes.py` merges them), and until the
    Psychologist's does, the record holds `selection` (and `session_id`, `expires_at`)
    alone, which the reads that count ended sessions filter out by `ended_as`."""

    selection: ChoiceRecord
    pattern_id: str | None
    """The pattern the session's summary joined (None outside every pattern)."""


class RatioRead(TypedDict):
    """A risk ratio with its 95 % confidence sequence, as served (`high` None: no upper
    end; `empty`: no ratio fits, both ends None)."""

    ratio: float | None
    low: float | None
    high: float | None
    empty: bool


class Verdicted(RatioRead):
    verdict: str


class Judged(Verdicted):
    unjoinedAsFailing: RatioRead
    """The ratio with every assigned session not joined counted as showing it: improved
    only when this one reads improved too."""


class ArmRead(TypedDict):
    assigned: int
    handStarted: int
    sessions: int
    lost: int
    abnormalEnds: int
    abnormalShare: float | None


class KindRead(Judged):
    specific: bool
    treatment: float | None
    control: float | None


class Matching(TypedDict):
    matching: int
    sessions: int


class PatternRead(Judged):
    """A pattern's trial: the pattern's own rate per arm, with the trial's interval."""

    patternId: str
    treatment: Matching
    control: Matching
    treatmentShare: float | None
    controlShare: float | None


class Mismatch(TypedDict):
    flagged: bool
    alpha: float
    flaggedAt: str | None
    """When a read first raised it: it stays raised for the trial's life."""


class GuardrailRead(TypedDict):
    alpha: float
    harmFound: bool
    harmfulRatio: float
    sessionsNeeded: int | None
    sessionsNeededReason: str | None


class RandomizedRead(TypedDict):
    """A trial's randomized read (`schemas/psychologist/trial_randomized.json`)."""

    design: str
    trialId: str
    status: str
    share: float
    arms: dict[str, ArmRead]
    sampleRatioMismatch: Mismatch
    abnormalEnds: Judged
    signalKinds: dict[str, KindRead]
    basis: list[str]
    pattern: PatternRead | None
    verdict: str
    minimumPerArm: int
    meaningfulRatio: float
    sessionsNeeded: int | None
    sessionsNeededReason: str | None
    guardrail: GuardrailRead
    method: str


class VersionRead(TypedDict):
    version: int | None
    sessions: int
    showing: int
    share: float | None


class AfterAdoption(Verdicted):
    """An adopted trial's basis per instructions version, before against after."""

    before: VersionRead
    after: VersionRead
    note: str


class TrialView(TypedDict):
    """A trial as the API answers it; with its read when asked for one."""

    id: str
    projectId: str
    hypothesisId: str | None
    patternId: str | None
    orgId: str
    agentId: str
    share: float
    maxSessions: int | None
    autoAdopt: bool
    status: str
    startedAt: str
    stoppedAt: str | None
    stoppedBy: str | None
    stopReason: str | None
    adoptedAs: int | None
    arms: NotRequired[dict[str, ArmRead]]
    verdict: NotRequired[str]
    effect: NotRequired[RandomizedRead]
    afterAdoption: NotRequired[AfterAdoption | None]
