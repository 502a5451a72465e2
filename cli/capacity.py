"""`evidencia capacity`: write `docs/capacity.md`, the capacity and cost model, from the
bench's measured costs (`benchmarks/results.json`), the price table
(`benchmarks/prices.json`), the deploy's sizing and the platforms' documented limits.

Nothing here is measured: the numbers are the bench's per-request and per-job costs
multiplied by a stated workload at 1x, 10x and 100x. `--check` fails when the file is
not what the current inputs give (the bench was re-run or a price changed)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.sizing import MAX_INSTANCES, PUBLIC_SIZING, WORKER_SIZING

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "capacity.md"
RESULTS = ROOT / "benchmarks" / "results.json"
PRICES = ROOT / "benchmarks" / "prices.json"
MONTH_S = 30 * 24 * 3600
SCALES = (1, 10, 100)
TENANTS = 10
"""Workspaces, projects and orgs at 1x; a scale multiplies the tenants, not their rates."""
BATCH_EVENTS = 100
OTLP_PREFIX = "psychologist_otlp_"


@dataclass(frozen=True)
class Operation:
    name: str
    what: str
    per_tenant_s: float
    """Requests a second from one tenant."""
    job: str | None = None
    """The job each request starts, if any."""
    function: str | None = None
    """The function that serves it, when its name is not one."""

    @property
    def served_by(self) -> str:
        return self.function or self.name


WORKLOAD = (
    Operation("research_ask", "research asks", 0.01, "research_run"),
    Operation("research_status", "status polls (five per ask)", 0.05),
    Operation(
        "psychologist_session_events",
        "event batches of 100 (20 events/s; a fifth of each re-sent by the next)",
        0.2,
    ),
    Operation(
        "psychologist_abnormal_end",
        "abnormal ends (one 1,000-event session in ten), analysed through the Batch API",
        0.002,
        "batched_analysis",
        function="psychologist_session_end",
    ),
    Operation(
        "psychologist_session_end",
        "normal ends (nine sessions in ten; each counts its log)",
        0.018,
        "session_end",
    ),
    Operation(
        "psychologist_analysis_create",
        "a member's analyses (one session in a hundred), asked the standard way",
        0.0002,
        "analysis",
    ),
    Operation("psychologist_hypotheses_list", "hypotheses pages", 0.05),
    Operation("agentconnect_session_start", "session starts", 0.05, "evaluation"),
    Operation("agentconnect_evaluation_get", "evaluation reads (one per start)", 0.05),
    *(
        Operation(f"psychologist_otlp_{signal}", what, rate)
        for signal, what, rate in (
            ("logs", "OTLP log exports (one Claude Code session at a time, every 5 s)", 0.0562),
            ("traces", "… its span exports (every 5 s, when a span ended)", 0.0389),
            ("metrics", "… its metric exports (every 60 s)", 0.0155),
        )
    ),
)
JOB_SECONDS = {
    "research_run": 8.0,
    "analysis": 20.0,
    "batched_analysis": 3.0,
    "session_end": 1.0,
    "evaluation": 3.0,
}
"""How long a job holds its worker, mostly waiting on Gemini: assumed, since the stand-in
answers at once (a research answer of a few thousand tokens, one 38k-token analysis call,
a batched analysis's submission and its finish from the batch's answers, reading a
1,000-event log with no model call, two one-value answers)."""
WORKER_OF = {"session_end": "analysis", "batched_analysis": "analysis"}
"""Jobs that share another job's worker function: a normal end's count of the log and a
batched analysis run in the analysis worker."""
WORKER_FUNCTION = {
    "research_run": "research_run_worker",
    "analysis": "psychologist_analysis_worker",
    "evaluation": "agentconnect_evaluation_worker",
}
FLOW_OF_JOB = {
    "research_run": "research",
    "analysis": "psychologist",
    "batched_analysis": "psychologist",
    "session_end": "psychologist",
    "evaluation": "agentconnect",
}
BATCHED_JOBS = frozenset({"batched_analysis"})
"""Jobs whose Gemini calls go through the Batch API, at its discount."""
CAP_SCALE = 100
"""The scale each function's instance cap is sized for."""
CAP_HEADROOM = 1.5
"""The cap over the instances the model gives at `CAP_SCALE`: bursts above the mean."""
DOCUMENT_WRITES_S = 1.0
"""Firestore's sustained write rate to one document."""
SOURCES = (
    "Firestore: about one sustained write a second to one document; new traffic ramped "
    "from 500 operations a second, growing by half every five minutes (500/50/5): "
    "<https://firebase.google.com/docs/firestore/best-practices>, "
    "<https://firebase.google.com/docs/firestore/quotas>",
    "Cloud Run functions: instances per function capped by `--max-instances` "
    f"(the deploy's default {MAX_INSTANCES}): "
    "<https://cloud.google.com/functions/docs/configuring/max-instances>",
    "Gemini API: requests and tokens per minute per Google Cloud project, by usage tier "
    "(Free; Tier 1 with billing; Tier 2 after $250 paid; Tier 3 after $1,000 paid); the "
    "numbers per model and tier are shown in AI Studio, no longer on the page: "
    "<https://ai.google.dev/gemini-api/docs/rate-limits>",
)


def batch_price(price: dict[str, Any], discount: float) -> dict[str, Any]:
    """A model's prices through the Batch API."""
    return {kind: price[kind] * discount for kind in ("input", "cached_input", "output")}


def cost_usd(usage: dict[str, Any], price: dict[str, Any]) -> float:
    """What Gemini bills for one job's tokens: fresh prompt, cached prompt and output
    (thinking included), at `price` (USD per million tokens)."""
    fresh = float(usage["input_tokens"] - usage["cached_tokens"])
    billed: float = (
        fresh * price["input"]
        + usage["cached_tokens"] * price["cached_input"]
        + usage["output_tokens"] * price["output"]
    )
    return round(billed / 1_000_000, 6)


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Costs:
    """Per request and per job, from the bench."""

    results: dict[str, Any]
    prices: dict[str, Any]

    def request_documents(self, name: str) -> tuple[float, float, float]:
        """Documents a warm request reads, writes and later deletes by TTL (an event
        batch: 100 new events at what one cost in the bench's session with replays)."""
        jobs = self.results["job_costs"]
        trips = self.results["round_trips"]
        if name == "psychologist_session_events":
            row = {k: v * BATCH_EVENTS for k, v in trips[name]["per_new_event"].items()}
        elif name == "agentconnect_session_start":
            row = jobs["evaluation"]["start_request"]
        elif name == "psychologist_analysis_create":
            row = jobs["analysis"]["create_request"]
        elif name == "psychologist_session_end":
            row = jobs["session_end"]["end_request"]
        elif name == "psychologist_abnormal_end":
            row = jobs["batched_analysis"]["end_request"]
        elif name.startswith(OTLP_PREFIX):
            found = self.session_telemetry()["signals"][name.removeprefix(OTLP_PREFIX)]
            row = {kind: found[f"{kind}_per_export"] for kind in ("reads", "writes", "deletes")}
        else:
            row = trips[name]
        return row["reads"], row["writes"], row.get("deletes", 0)

    def session_telemetry(self) -> dict[str, Any]:
        """The bench's realistic Claude Code session, replayed through the OTLP endpoints."""
        session: dict[str, Any] = self.results["telemetry"]["claude_code_session"]
        return session

    def instance_rps(self, name: str) -> float:
        """Requests a second one public instance serves: measured at concurrency 8 where
        the bench drives it, else one request at a time at its warm p50."""
        throughput = self.results["throughput"].get(name)
        if throughput is not None:
            return float(throughput[str(PUBLIC_SIZING.concurrency)]["function"]["rps"])
        return 1 / self.p50_s(name)

    def p50_s(self, name: str) -> float:
        """A request's warm p50, as measured, or the ask's for one the bench does not time
        (a session start: one read and one commit, as an ask)."""
        latency = self.results["warm_latency"]
        return float((latency.get(name) or latency["research_ask"])["function"]["p50_ms"]) / 1000

    def job(self, job: str) -> dict[str, Any]:
        row: dict[str, Any] = self.results["job_costs"][job]
        return row

    def price(self, job: str, then: bool = False) -> dict[str, Any]:
        """What the job's flow's model costs (after its next announced change when `then`
        and it has one), through the Batch API for a batched job."""
        model = self.results["tokens"]["models"][FLOW_OF_JOB[job]]
        price: dict[str, Any] = self.prices["models"][model]
        if then:
            price = price.get("then", price)
        if job in BATCHED_JOBS:
            return batch_price(price, self.prices["batch"]["discount"])
        return price

    def next_change(self) -> str | None:
        """When the next announced price change of a flow's model takes effect."""
        models = self.results["tokens"]["models"].values()
        dates = [
            self.prices["models"][m]["then"]["from"]
            for m in models
            if "then" in self.prices["models"][m]
        ]
        return min(dates) if dates else None

    def job_tokens(self, job: str, then: bool = False) -> dict[str, Any]:
        """A job's tokens (its first run: no implicit-cache hit) and their cost at the
        price table's current prices (or its next ones, when `then`)."""
        tokens = self.results["tokens"]
        if job == "research_run":
            by_size = {row["items"]: row for row in tokens["research"]}
            usage = by_size[self.job(job)["evidence_items"]]["first"]
        elif job in ("analysis", "batched_analysis"):
            usage = tokens["analysis"]["first"]
        elif job == "session_end":
            usage = {"input_tokens": 0, "cached_tokens": 0, "output_tokens": 0, "tokens": 0}
        else:
            steps = tokens["evaluation"]["steps"] / tokens["evaluation"]["starts"]
            usage = {k: v * steps for k, v in tokens["evaluation"]["per_step"].items()}
        return {**usage, "cost_usd": cost_usd(usage, self.price(job, then))}


@dataclass
class Scale:
    factor: int
    requests_s: dict[str, float]
    instances: dict[str, int]
    worker_instances: dict[str, int]
    reads_s: float
    writes_s: float
    deletes_s: float
    gemini_rpm: float
    gemini_tpm: float
    gemini_usd: float
    gemini_next_usd: float
    """Gemini at the next announced prices."""
    cloud_run_usd: float
    firestore_usd: float

    @property
    def monthly_usd(self) -> float:
        return self.gemini_usd + self.cloud_run_usd + self.firestore_usd

    @property
    def next_monthly_usd(self) -> float:
        return self.gemini_next_usd + self.cloud_run_usd + self.firestore_usd


def scale_of(costs: Costs, factor: int) -> Scale:
    platform = costs.prices["platform"]
    tenants = TENANTS * factor
    requests = {op.name: op.per_tenant_s * tenants for op in WORKLOAD}
    reads = writes = deletes = rpm = tpm = gemini_usd = gemini_next_usd = billed_s = 0.0
    served: dict[str, float] = {}
    in_flight: dict[str, float] = {}
    for op in WORKLOAD:
        rate = requests[op.name]
        read, written, deleted = costs.request_documents(op.name)
        reads, writes, deletes = (
            reads + rate * read,
            writes + rate * written,
            deletes + rate * deleted,
        )
        served[op.served_by] = served.get(op.served_by, 0.0) + rate
        billed_s += rate * costs.p50_s(op.served_by)
        if op.job is None:
            continue
        job = costs.job(op.job)
        tokens = costs.job_tokens(op.job)
        reads, writes = reads + rate * job["reads"], writes + rate * job["writes"]
        deletes += rate * job.get("deletes", 0)
        rpm += rate * job["gemini_calls"] * 60
        tpm += rate * tokens["tokens"] * 60
        gemini_usd += rate * tokens["cost_usd"] * MONTH_S
        gemini_next_usd += rate * costs.job_tokens(op.job, then=True)["cost_usd"] * MONTH_S
        held = rate * JOB_SECONDS[op.job]
        worker = WORKER_OF.get(op.job, op.job)
        in_flight[worker] = in_flight.get(worker, 0.0) + held
        billed_s += held / min(max(held, 1.0), WORKER_SIZING.concurrency)
    instances = {
        name: max(1, math.ceil(rate / costs.instance_rps(name))) for name, rate in served.items()
    }
    workers = {
        WORKER_FUNCTION[worker]: max(1, math.ceil(held / WORKER_SIZING.concurrency))
        for worker, held in in_flight.items()
    }
    total_requests = sum(requests.values()) * MONTH_S
    cloud_run = (
        billed_s * MONTH_S * (platform["cloud_run_vcpu_second"] + platform["cloud_run_gib_second"])
        + total_requests / 1e6 * platform["cloud_run_million_requests"]
    )
    firestore = (
        reads * MONTH_S / 1e5 * platform["firestore_100k_reads"]
        + writes * MONTH_S / 1e5 * platform["firestore_100k_writes"]
        + deletes * MONTH_S / 1e5 * platform["firestore_100k_deletes"]
    )
    return Scale(
        factor,
        requests,
        instances,
        workers,
        reads,
        writes,
        deletes,
        rpm,
        tpm,
        gemini_usd,
        gemini_next_usd,
        cloud_run,
        firestore,
    )


def _busiest_documents() -> list[tuple[str, float, str]]:
    """Writes a second on the documents one tenant writes most, at its stated rates (a
    scale adds tenants, so these do not grow with it)."""
    rate = {op.name: op.per_tenant_s for op in WORKLOAD}
    return [
        (
            "a session (`projects/{p}/sessions/{s}`), every batch",
            rate["psychologist_session_events"],
            "one write per batch, counts by transforms; `last_seen_at` at most once per tenth "
            "of the heartbeat timeout",
        ),
        (
            "a session's event index (`.../sessions/{s}/event_index/head`), every batch",
            rate["psychologist_session_events"],
            "one conditioned write per batch with new events; batches into one session take "
            "turns on it",
        ),
        (
            "a telemetry session (`projects/{p}/sessions/{s}`), every OTLP export",
            sum(rate[f"{OTLP_PREFIX}{signal}"] for signal in ("logs", "traces", "metrics")),
            "one write per export, as an event batch's",
        ),
        (
            "an agent (`orgs/{o}/agents/{a}`), every start",
            rate["agentconnect_session_start"],
            "`last_seq` by a `Maximum` transform in the start's commit",
        ),
        (
            "a conversation, every ask",
            rate["research_ask"],
            "`run_count` in the ask's conditioned commit",
        ),
        (
            "one usage shard of a tenant, every job",
            max(rate["research_ask"], rate["agentconnect_session_start"]) / 8,
            "jobs spread over eight shards by their id",
        ),
    ]


INSTANCE_CAP = (
    "past the cap Cloud Run holds requests briefly, then refuses them with 429 (a trigger's "
    "event is delivered again later); raise `evidencia deploy --max-instances`, for a "
    "worker with the Gemini quota in view"
)


def _load_costs() -> Costs:
    return Costs(_load(RESULTS), _load(PRICES))


def instance_caps(costs: Costs | None = None) -> dict[str, int]:
    """Each function's `--max-instances`: what the model gives it at `CAP_SCALE`, with
    `CAP_HEADROOM`, and never below `MAX_INSTANCES`."""
    scale = scale_of(costs or _load_costs(), CAP_SCALE)
    needed = {**scale.instances, **scale.worker_instances}
    return {
        name: max(MAX_INSTANCES, math.ceil(count * CAP_HEADROOM)) for name, count in needed.items()
    }


def instance_cap(name: str, caps: dict[str, int]) -> int:
    return caps.get(name, MAX_INSTANCES)


RAMP_START_S, RAMP_GROWTH, RAMP_STEP_MIN = 500, 1.5, 5
"""Firestore's 500/50/5 rule: start a new key range at 500 operations a second, then grow
by half every five minutes."""


def _limits(scale: Scale, caps: dict[str, int]) -> list[tuple[float, str]]:
    """Each function's share of its instance cap, with what it is."""
    functions = {**scale.instances, **scale.worker_instances}
    rows = [
        (
            count / instance_cap(name, caps),
            f"`{name}`: {count} of its {instance_cap(name, caps)} instances",
        )
        for name, count in functions.items()
    ]
    return sorted(rows, reverse=True)


def _first_limit(scale: Scale, caps: dict[str, int]) -> str:
    rows = _limits(scale, caps)
    share, what = rows[0]
    if share < 1:
        return f"no limit is reached; the nearest is {what} ({share:.0%})"
    over = [f"{w} ({used:.0%})" for used, w in rows if used >= 1]
    return "; ".join(over) + f": {INSTANCE_CAP}"


def _ramp_words(minutes: float) -> str:
    return "at once" if minutes == 0 else f"over {minutes:g} minutes"


def ramp_minutes(operations_s: float) -> float:
    """How long Firestore's 500/50/5 rule takes to reach `operations_s` from nothing."""
    if operations_s <= RAMP_START_S:
        return 0.0
    steps = math.ceil(math.log(operations_s / RAMP_START_S, RAMP_GROWTH))
    return float(steps * RAMP_STEP_MIN)


CENTS_BELOW = 10
"""Dollar amounts under this are shown with cents."""


def _money(value: float) -> str:
    return f"${value:,.0f}" if value >= CENTS_BELOW else f"${value:,.2f}"


def _lines(costs: Costs) -> list[str]:
    scales = [scale_of(costs, factor) for factor in SCALES]
    caps = instance_caps(costs)
    change = costs.next_change()
    header = " | ".join(f"{s.factor}x" for s in scales)
    rule = "|".join("---:" for _ in scales)
    lines = [
        "# Capacity and cost",
        "",
        "Generated by `evidencia capacity` from `benchmarks/results.json` (bench of "
        f"{costs.results['machine']['when']}), `benchmarks/prices.json` (Gemini prices read "
        f"{costs.prices['read']}) and the deploy's sizing; do not edit by hand. Every figure "
        "is a measured per-request or per-job cost multiplied by the workload below.",
        "",
        "## The workload",
        "",
        f"At 1x: {TENANTS} research workspaces, {TENANTS} Psychologist projects and "
        f"{TENANTS} AgentConnect orgs, each at the rates below. 10x and 100x have ten and a "
        "hundred times the tenants at the same rates.",
        "",
        f"| per tenant | per second | overall at {header} |",
        f"|---|---:|{rule}|",
    ]
    for op in WORKLOAD:
        cells = " | ".join(f"{s.requests_s[op.name]:g}" for s in scales)
        lines.append(f"| {op.what} | {op.per_tenant_s:g} | {cells} |")
    lines += [
        "",
        "## What it takes",
        "",
        f"| | {header} |",
        f"|---|{rule}|",
    ]
    rows: list[tuple[str, Callable[[Scale], str]]] = [
        ("Firestore document reads / s", lambda s: f"{s.reads_s:,.1f}"),
        ("Firestore document writes / s", lambda s: f"{s.writes_s:,.1f}"),
        ("Firestore TTL deletes / s", lambda s: f"{s.deletes_s:,.1f}"),
        ("Gemini requests / min", lambda s: f"{s.gemini_rpm:,.0f}"),
        ("Gemini tokens / min", lambda s: f"{s.gemini_tpm:,.0f}"),
        (
            "public instances (all functions)",
            lambda s: f"{sum(s.instances.values())}",
        ),
        (
            "busiest public function's instances",
            lambda s: "{} ({})".format(*max(((v, k) for k, v in s.instances.items()))),
        ),
        ("worker instances", lambda s: f"{sum(s.worker_instances.values())}"),
        ("Gemini / month", lambda s: _money(s.gemini_usd)),
        ("Cloud Run / month", lambda s: _money(s.cloud_run_usd)),
        ("Firestore operations / month", lambda s: _money(s.firestore_usd)),
        ("**total / month**", lambda s: f"**{_money(s.monthly_usd)}**"),
    ]
    if change is not None:
        rows += [
            (f"Gemini / month from {change} (announced)", lambda s: _money(s.gemini_next_usd)),
            (f"total / month from {change}", lambda s: _money(s.next_monthly_usd)),
        ]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(s) for s in scales) + " |")
    lines += ["", "## The limit met first", ""]
    lines += [f"- **{s.factor}x**: {_first_limit(s, caps)}." for s in scales]
    lines += [
        f"- **Instance caps**: `evidencia deploy` gives each function the instances above at "
        f"{CAP_SCALE}x with {CAP_HEADROOM:g}x headroom, at least {MAX_INSTANCES}: "
        + ", ".join(f"`{name}` {cap}" for name, cap in sorted(caps.items()) if cap > MAX_INSTANCES)
        + f"; every other function {MAX_INSTANCES}.",
        "- **Firestore, at every scale**: reads and writes spread over random chunk keys, "
        "eight usage shards per tenant and documents per tenant, so no document gets hot "
        "(below); a jump to a new scale must be ramped: "
        + ", ".join(
            f"{s.factor}x ({s.reads_s + s.writes_s:,.0f} operations a second) "
            + _ramp_words(ramp_minutes(s.reads_s + s.writes_s))
            for s in scales
        )
        + ". An event batch reads its session and the session's packed event index and "
        "writes a chunk, the index and the session, whatever its size.",
        f"- **Gemini, at every scale**: the models above need {scales[-1].gemini_tpm:,.0f} "
        "tokens a minute at 100x. Compare the project's own limits in AI Studio; a 429 "
        "waits Gemini's `RetryInfo` within the job's deadline and then fails the job "
        "`provider_unavailable`, and the token budgets of each workspace, project and org "
        "stop runaway spend before the quota does.",
        "",
        "## The busiest documents",
        "",
        "A scale adds tenants, so the hottest documents stay where one tenant puts them: "
        f"against Firestore's ~{DOCUMENT_WRITES_S:g} sustained write a second per "
        "document:",
        "",
        "| document | writes / s | why it stays low |",
        "|---|---:|---|",
    ]
    lines += [f"| {doc} | {rate:g} | {why} |" for doc, rate, why in _busiest_documents()]
    lines += ["", "## Per request and per job, as measured", ""]
    lines += _measured_lines(costs)
    lines += _patterns_lines(costs)
    lines += ["", "## Assumptions and sources", ""]
    lines += [
        f"- Public functions: {PUBLIC_SIZING.cpu} vCPU, {PUBLIC_SIZING.memory}, concurrency "
        f"{PUBLIC_SIZING.concurrency}; workers: {WORKER_SIZING.cpu} vCPU, "
        f"{WORKER_SIZING.memory}, concurrency {WORKER_SIZING.concurrency} (`cli/sizing.py`).",
        "- Instances: the request rate over one instance's measured requests a second at "
        "concurrency 8 (status, hypotheses, evaluation, ingestion) or, for the rest, one "
        "request at a time at its warm p50; the bench machine (2 cores shared with the "
        "emulator and the clients) understates a real instance.",
        "- Job durations (the stand-in answers at once): "
        + ", ".join(f"{job} {seconds:g} s" for job, seconds in JOB_SECONDS.items())
        + "; billed Cloud Run time is request-based (p50 per request, a job's duration "
        "shared by up to four at once).",
        "- Gemini cost: each job's first run (no implicit-cache hit; repeated research "
        "questions over one conversation cost less, see the bench's token table), research "
        "runs over 100 evidence items, analyses of 1,000 events; a normal session end's "
        "count of its log calls no model. Each flow is priced on its own model: "
        + ", ".join(f"{flow} {model}" for flow, model in costs.results["tokens"]["models"].items())
        + f"; an abnormal end's analysis through the Batch API at "
        f"{costs.prices['batch']['discount']:.0%} of the standard price "
        f"({costs.prices['batch']['source']}).",
        f"- Prices: {costs.prices['source']}; {costs.prices['cached_note']} Platform: "
        f"{costs.prices['platform']['source']}.",
        "- Firestore bills a TTL deletion as a document delete: each document created with "
        "an `expires_at` is counted as one delete to come; an aggregation query as one read "
        "per up to 1,000 index entries it matched (the workload's requests make none; the "
        "effect and calibration reads do): <https://firebase.google.com/docs/firestore/pricing>.",
    ]
    lines += [f"- {source}" for source in SOURCES]
    return lines


def _per_span_lines(costs: Costs) -> list[str]:
    """The same through the OTLP endpoints, per record of each signal, and a realistic
    Claude Code session's telemetry."""
    telemetry = costs.results["telemetry"]
    lines = [""]
    for name, endpoint, noun in (
        ("per_log_record", "logs", "Claude Code log record"),
        ("per_span", "trace", "span"),
        ("per_metric_point", "metrics", "delta token or cost metric point"),
    ):
        row = telemetry[name]
        lines.append(
            f"- Through the OTLP {endpoint} endpoint, per new {noun} ({row['sent']:,} sent in "
            f"{row['exports']} exports, {row['new']:,} new): {row['reads']:g} documents read, "
            f"{row['writes']:g} written, {row['deletes']:g} deleted later by TTL."
        )
    session = costs.session_telemetry()
    whole = session["session"]
    exports = ", ".join(
        f"{signal} {row['exports_per_minute']:g} ({row['records_per_minute']:g} records)"
        for signal, row in session["signals"].items()
    )
    lines += [
        "",
        f"A Claude Code session of {session['prompts']} prompts over {session['minutes']:g} "
        f"minutes, exporting at its default intervals, sends {whole['records_per_minute']:g} "
        f"records and {whole['exports_per_minute']:g} exports a minute (a minute: {exports}); "
        f"an export costs {whole['reads_per_export']:g} documents read and "
        f"{whole['writes_per_export']:g} written, whatever it holds, so the session costs "
        f"{whole['reads']:,} read, {whole['writes']:,} written and {whole['deletes']:,} deleted "
        f"later ({whole['reads_per_record']:g} read and {whole['writes_per_record']:g} written "
        f"a record) and keeps {session['stored']['events']} events after merges. The "
        "workload's OTLP rows are one such session running at all times in each project.",
    ]
    return lines


def _measured_lines(costs: Costs) -> list[str]:
    per_event = costs.results["round_trips"]["psychologist_session_events"]["per_new_event"]
    lines = [
        f"Ingestion, per new event ({per_event['sent']:,} events sent in {per_event['batches']} "
        f"batches, {per_event['new']:,} new): {per_event['reads']:g} documents read, "
        f"{per_event['writes']:g} written, {per_event['deletes']:g} deleted later by TTL.",
        *_per_span_lines(costs),
        "",
        "| | documents read | written | deleted (TTL) | Gemini calls | tokens | cost |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for op in WORKLOAD:
        read, written, deleted = costs.request_documents(op.name)
        lines.append(f"| request: {op.name} | {read:g} | {written:g} | {deleted:g} | | | |")
    for job in JOB_SECONDS:
        row, tokens = costs.job(job), costs.job_tokens(job)
        lines.append(
            f"| job: {job} | {row['reads']} | {row['writes']} | {row.get('deletes', 0)} | "
            f"{row['gemini_calls']} | {tokens['tokens']:,.0f} | ${tokens['cost_usd']:.4f} |"
        )
    return lines


DAY_S = 24 * 3600
ENDS = ("psychologist_abnormal_end", "psychologist_session_end")
"""The workload's session ends: each leaves a summary a daily refresh reads."""


def _patterns_lines(costs: Costs) -> list[str]:
    """Documents per ended session of a patterns refresh, and what a daily refresh of each
    project reads at the workload's rate of session ends."""
    patterns = costs.results.get("patterns")
    if patterns is None:
        return []
    first, repeat = patterns["first"], patterns["repeat"]
    rate = {op.name: op.per_tenant_s for op in WORKLOAD}
    window = sum(rate[name] for name in ENDS) * DAY_S * patterns["window_days"]
    daily = window * repeat["reads_per_session"]
    read_price = costs.prices["platform"]["firestore_100k_reads"]
    monthly = [
        f"{factor}x {_money(daily * TENANTS * factor * 30 / 1e5 * read_price)}" for factor in SCALES
    ]
    return [
        "",
        "## Patterns",
        "",
        f"A refresh reads every summary of its {patterns['window_days']}-day window, each "
        "session's outcome record, the member sessions (their cost) and their hypotheses, "
        "and writes each new failure sentence's vector, each changed membership and each "
        f"pattern. Measured over {patterns['sessions']:,} ended sessions of one agent:",
        "",
        "| refresh | documents read / session | written / session |",
        "|---|---:|---:|",
        f"| first (every failure sentence new) | {first['reads_per_session']:g} | "
        f"{first['writes_per_session']:g} |",
        f"| repeat over the same window | {repeat['reads_per_session']:g} | "
        f"{repeat['writes_per_session']:g} |",
        "",
        f"At the workload's session ends ({sum(rate[name] for name in ENDS):g} a second per "
        f"project) a project's window holds {window:,.0f} ended sessions, "
        f"{window / patterns['sessions']:.1f} times the bench's, so its daily refresh reads "
        f"about {daily:,.0f} documents, a session read again each day it stays in the window: "
        f"Firestore reads a month for every project's daily refresh, {', '.join(monthly)} "
        "(not in the totals above, and beyond the size the bench measured).",
    ]


def render() -> str:
    costs = _load_costs()
    return "\n".join(_lines(costs)) + "\n"


def write(check: bool = False) -> int:
    text = render()
    if check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run `evidencia capacity`")
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0
