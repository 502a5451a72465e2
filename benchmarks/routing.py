"""Model selection judged by outcomes, on simulated sessions whose targets have known
abnormal-end probabilities.

Small scale, the real path: sessions started through the local host with their own ids,
evaluated by the worker (the Gemini stand-in answers each step as the session's scripted
answers say), logged and ended in the linked project under the same ids, then the
selection report read; it must count exactly what was sent. Large scale, the report's own
estimators (`functions.agentconnect.report.estimate`, Wilson's interval) over seeded
replications: the coverage of every interval served against the truth, the estimator's
error, and what the recommended rules give against "always the strongest target" and
"always the default"."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, cast

import requests

from benchmarks.counting import COUNTER
from benchmarks.seeding import Seed

SHARE = 0.1
SESSIONS = 5_000
REPLICATIONS = 500
REAL_SESSIONS = 60
TRUTH_CONTEXTS = 200_000
SEED = 20261202
AGENT_NAME = "routed-agent"
STARTED = datetime(2026, 11, 1, tzinfo=UTC)
WINDOW = timedelta(days=30)
"""The stationary simulation's sessions start evenly over the window from STARTED."""

DEFAULT = {
    "runtime": "local",
    "model": "flash",
    "effort": "low",
    "permissionMode": "default",
    "fastMode": True,
}
STRONG = {**DEFAULT, "model": "pro", "effort": "high"}
PLANNED = {**DEFAULT, "runtime": "container", "effort": "medium"}
SELECTION: dict[str, Any] = {
    "decision": {
        "decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
        "question": {"type": "boolean", "instructions": "Does the task need deep reasoning?"},
        "rules": [
            {
                "model": "pro",
                "effort": "high",
                "when": {"type": "boolean", "thresholds": {"true": 0.8}},
            }
        ],
    },
    "steps": [
        {
            "id": "size",
            "decisionId": "3f2b8a4e-1c9d-4e7f-8a6b-2d5c9e0f1a3b",
            "question": {
                "type": "choice",
                "instructions": "How large is the change?",
                "criteria": {"small": "one file", "large": "many files"},
            },
            "rules": [
                {
                    "runtime": "container",
                    "effort": "medium",
                    "when": {"type": "choice", "thresholds": {"large": 0.6}},
                }
            ],
        }
    ],
    "default": DEFAULT,
    "exploration": {"share": SHARE},
}
ABNORMAL = {  # (target model/runtime, hard task) -> probability of an abnormal end
    ("strong", False): 0.10,
    ("strong", True): 0.15,
    ("default", False): 0.12,
    ("default", True): 0.45,
    ("planned", False): 0.20,
    ("planned", True): 0.35,
}


def _kind(target: dict[str, Any]) -> str:
    if target["model"] == STRONG["model"]:
        return "strong"
    return "planned" if target["runtime"] == PLANNED["runtime"] else "default"


@dataclass(frozen=True)
class Context:
    """A session's task as the simulation knows it, and the answers the model gives."""

    hard: bool
    answers: dict[str, Any]


def _context(rng: random.Random) -> Context:
    hard = rng.random() < 0.4
    says_hard = hard if rng.random() < 0.85 else not hard
    large = rng.random() < 0.3
    return Context(
        hard,
        {
            "initial": {"type": "boolean", "value": says_hard, "probability": rng.uniform(0.5, 1)},
            "size": {
                "type": "choice",
                "value": "large" if large else "small",
                "probability": rng.uniform(0.5, 1),
            },
        },
    )


def _abnormal_chance(target: dict[str, Any], context: Context) -> float:
    return ABNORMAL[(_kind(target), context.hard)]


Policy = Callable[[Context], dict[str, Any]]


def _policy(selection: dict[str, Any]) -> Policy:
    from functions.agentconnect.selection import choice_of

    def choose(context: Context) -> dict[str, Any]:
        found = choice_of(cast(Any, selection), context.answers)
        if found is None:
            raise LookupError("every simulated session answers every step")
        return cast(dict[str, Any], found.target)

    return choose


@dataclass(frozen=True)
class Truth:
    abnormal: float
    strongest: float


def _truth(policy: Policy) -> Truth:
    """A policy's abnormal-end share and share of the strongest target, over many
    contexts drawn from the simulation's own distribution."""
    rng = random.Random(SEED)  # noqa: S311 - a seeded simulation
    abnormal = strongest = 0.0
    for _ in range(TRUTH_CONTEXTS):
        context = _context(rng)
        target = policy(context)
        abnormal += _abnormal_chance(target, context)
        strongest += _kind(target) == "strong"
    return Truth(abnormal / TRUTH_CONTEXTS, strongest / TRUTH_CONTEXTS)


@cache
def _truth_of(selection_json: str) -> Truth:
    return _truth(_policy(json.loads(selection_json)))


@cache
def _target_truths() -> dict[str, float]:
    """Each target's abnormal-end share among the sessions the selection with its
    exploration gives it: what a target's share in the report estimates."""
    from functions.agentconnect.selection import target_key

    rng = random.Random(SEED + 1)  # noqa: S311 - a seeded simulation
    rules = _policy(SELECTION)
    chances: dict[str, list[float]] = {}
    for _ in range(TRUTH_CONTEXTS):
        context = _context(rng)
        target, _candidates = _given(rules(context), rng)
        chances.setdefault(target_key(cast(Any, target)), []).append(
            _abnormal_chance(target, context)
        )
    return {key: sum(found) / len(found) for key, found in chances.items()}


@cache
def _candidates_of(chosen_json: str) -> list[dict[str, Any]]:
    from functions.agentconnect.selection import draw_candidates

    found = draw_candidates(cast(Any, SELECTION), json.loads(chosen_json))
    return cast(list[dict[str, Any]], found)


def _given(
    chosen: dict[str, Any], rng: random.Random
) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """The target a session gets under the exploration share, and the candidates it was
    drawn among when it explored."""
    if rng.random() >= SHARE:
        return chosen, None
    candidates = _candidates_of(json.dumps(chosen, sort_keys=True))
    return rng.choice(candidates), candidates


def _replication(rng: random.Random) -> dict[str, Any]:
    """One report's worth of sessions under the selection with exploration, judged by the
    report's own estimators."""
    from functions.agentconnect.report import MIN_MATCHED, Explored, assess
    from functions.agentconnect.selection import changed, target_key
    from functions.loop.estimators import Logged, wilson

    rules = _policy(SELECTION)
    by_target: dict[str, list[int]] = {}
    explored: list[Explored] = []
    for index in range(SESSIONS):
        context = _context(rng)
        target, candidates = _given(rules(context), rng)
        ended = int(rng.random() < _abnormal_chance(target, context))
        key = target_key(cast(Any, target))
        by_target.setdefault(key, []).append(ended)
        if candidates is not None:
            explored.append(
                Explored(
                    Logged(key, SHARE / len(candidates), ended, SHARE),
                    context.answers,
                    frozenset(target_key(cast(Any, c)) for c in candidates),
                    1,
                    STARTED + WINDOW * index / SESSIONS,
                )
            )
    truths = _target_truths()
    shares = []
    for key, ends in by_target.items():
        found = wilson(sum(ends), len(ends))
        shares.append((found.low, found.high, truths[key]))
    assessed = assess(cast(Any, SELECTION), explored, STARTED + WINDOW / 2)
    estimates = assessed.whole
    assert estimates is not None  # noqa: S101 - about 500 explored, over the minimum
    served = [(estimates.current.estimate, _truth_of(json.dumps(SELECTION)).abnormal)]
    for candidate in estimates.candidates:
        if candidate.weights.estimate.matched >= MIN_MATCHED:
            body = json.dumps(changed(cast(Any, SELECTION), candidate.change))
            served.append((candidate.weights.estimate, _truth_of(body).abnormal))
    best = assessed.recommended
    chosen_rules = changed(cast(Any, SELECTION), best.change) if best else SELECTION
    return {
        "shares": shares,
        "estimates": [(e.low, e.high, e.value, truth) for e, truth in served],
        "recommended": _truth_of(json.dumps(chosen_rules)),
        "recommended_any": best is not None,
        "explored": len(explored),
        "drifted": assessed.drift is not None and assessed.drift.drifted,
    }


def simulation(replications: int = REPLICATIONS) -> dict[str, Any]:
    rng = random.Random(SEED)  # noqa: S311 - a seeded simulation
    runs = [_replication(rng) for _ in range(replications)]
    shares = [s for run in runs for s in run["shares"]]
    estimates = [e for run in runs for e in run["estimates"] if e[0] is not None]
    current = [run["estimates"][0] for run in runs]
    errors = [abs(value - truth) for _, _, value, truth in estimates]
    recommended = [run["recommended"] for run in runs]
    strongest = _truth(lambda _context: STRONG)
    default = _truth(lambda _context: DEFAULT)
    rules = _truth_of(json.dumps(SELECTION))

    def covered(found: list[Any]) -> float:
        inside = sum(1 for low, high, *_, truth in found if low <= truth <= high)
        return round(inside / len(found), 4)

    return {
        "replications": replications,
        "sessions_per_replication": SESSIONS,
        "exploration_share": SHARE,
        "explored_per_replication": round(sum(r["explored"] for r in runs) / len(runs), 1),
        "halves_disagreed": sum(r["drifted"] for r in runs),
        "coverage": {
            "target_shares_wilson": covered(shares),
            "target_share_intervals": len(shares),
            "current_rules_snipw": covered(current),
            "every_served_estimate_snipw": covered(estimates),
            "served_estimates": len(estimates),
        },
        "estimator_error": {
            "mean_absolute": round(sum(errors) / len(errors), 4),
            "mean_signed": round(
                sum(value - truth for _, _, value, truth in estimates) / len(estimates), 4
            ),
        },
        "policies": {
            "recommended": {
                "abnormal_share": round(sum(t.abnormal for t in recommended) / len(runs), 4),
                "strongest_share": round(sum(t.strongest for t in recommended) / len(runs), 4),
                "replications_with_a_recommendation": sum(r["recommended_any"] for r in runs),
                "recommendations_truly_worse": sum(
                    r["recommended_any"] and r["recommended"].abnormal >= rules.abnormal
                    for r in runs
                ),
            },
            "current_rules": {
                "abnormal_share": round(rules.abnormal, 4),
                "strongest_share": round(rules.strongest, 4),
            },
            "always_strongest": {
                "abnormal_share": round(strongest.abnormal, 4),
                "strongest_share": 1.0,
            },
            "always_default": {
                "abnormal_share": round(default.abnormal, 4),
                "strongest_share": 0.0,
            },
        },
    }


def real_path(seed: Seed, host_url: str, gemini: Any) -> dict[str, Any]:
    """REAL_SESSIONS sessions through the local host, logged and ended in the linked
    project; the report's counts against what was sent."""
    from cli.gemini_stand_in import Recorded, Reply

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {seed.token}"
    agent = f"{host_url}/v1/orgs/{seed.org}/agents/{ROUTED_AGENT}"
    put = session.put(f"{agent}/model-selection", json=SELECTION, timeout=30)
    put.raise_for_status()
    linked = session.put(
        f"{agent}/outcome-source",
        json={"projectId": seed.project_small, "agent": AGENT_NAME},
        timeout=30,
    )
    linked.raise_for_status()
    scripted: dict[str, Context] = {}

    def respond(recorded: Recorded) -> Reply:
        properties = recorded.body["generationConfig"]["responseJsonSchema"]["properties"]
        if "hypotheses" in properties:
            return Reply(text=json.dumps({"hypotheses": []}))
        title = json.loads(recorded.prompt.split("\n")[1])["title"]
        step = "initial" if "deep reasoning" in recorded.prompt else "size"
        answer = scripted[title].answers[step]
        return Reply(
            text=json.dumps({"value": answer["value"], "probability": answer["probability"]})
        )

    rng = random.Random(SEED)  # noqa: S311 - a seeded simulation
    gemini.respond_with(respond)
    sent: dict[str, list[int]] = {}
    for index in range(REAL_SESSIONS):
        title = f"routed task {index}"
        scripted[title] = context = _context(rng)
        started = session.post(
            f"{agent}/sessions",
            json={"sessionId": f"routed-{index}", "title": title, "input": {}},
            timeout=30,
        )
        started.raise_for_status()
        target = _frozen(session, f"{agent}/model-evaluations/{started.json()['seq']}")
        ended = rng.random() < _abnormal_chance(target, context)
        _log_and_end(session, host_url, seed.project_small, f"routed-{index}", ended)
        key = "|".join(
            (target["runtime"], target["model"], target["effort"], target["permissionMode"], "fast")
        )
        counts = sent.setdefault(key, [0, 0])
        counts[0] += 1
        counts[1] += int(ended)
    COUNTER.clear()
    report = session.get(f"{agent}/selection-report", timeout=60).json()
    cost = {"firestore_calls": len(COUNTER.calls), "reads": COUNTER.reads}
    read = {t["targetKey"]: [t["sessions"], t["abnormalEnds"]["count"]] for t in report["targets"]}
    return {
        "sessions_sent": REAL_SESSIONS,
        "report_joined": report["sessions"]["joined"],
        "per_target_sent": sent,
        "per_target_read": read,
        "counts_equal": read == sent and report["sessions"]["joined"] == REAL_SESSIONS,
        "explored": report["exploration"]["explored"],
        "report_cost": cost,
        "report_targets": len(report["targets"]),
    }


ROUTED_AGENT = "5d6f2a3b-8c4e-4f1a-9b7d-2e3c4a5b6c7d"


def _frozen(session: requests.Session, url: str) -> dict[str, Any]:
    import time

    for _ in range(400):
        reply = session.get(url, timeout=30)
        if reply.status_code == 200:
            return cast(dict[str, Any], reply.json()["target"])
        time.sleep(0.05)
    raise RuntimeError(f"{url} never froze")


def _log_and_end(
    session: requests.Session, host_url: str, project: str, session_id: str, abnormal: bool
) -> None:
    import time
    from datetime import UTC, datetime

    from benchmarks.seeding import event_batch
    from functions.psychologist import batch, store

    base = f"{host_url}/projects/{project}/sessions/{session_id}"
    events = event_batch(datetime(2026, 11, 20, tzinfo=UTC), 0, 5, agent=AGENT_NAME)
    body = json.dumps({"events": events})
    session.post(
        f"{base}/events", data=body, headers={"Content-Type": "application/json"}, timeout=30
    ).raise_for_status()
    state = "closed_abnormally" if abnormal else "closed"
    ended = session.post(f"{base}/end", json={"state": state}, timeout=30)
    ended.raise_for_status()
    analysis_id = ended.json()["analysisId"]
    url = f"{host_url}/projects/{project}/analyses/{analysis_id}"
    for _ in range(400):
        read = session.get(url, timeout=30).json()
        if read["status"] in ("completed", "failed"):
            return
        if read.get("batch"):
            batch.poll(store.analysis_ref(project, analysis_id))
        time.sleep(0.05)
    raise RuntimeError(f"{url} never settled")


def routing(seed: Seed, host_url: str, gemini: Any) -> dict[str, Any]:
    from cli import local_model

    try:
        real = real_path(seed, host_url, gemini)
    finally:
        gemini.respond_with(local_model.answer)
    return {"real_path": real, "simulation": simulation()}
