"""The selection's rules: what a configuration may say, how answers pick a target, how an
exploring session draws one, and the threshold changes a report estimates."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from functions.agentconnect.documents import (
    Answer,
    Condition,
    Decision,
    Question,
    Rule,
    Selection,
    Target,
)
from functions.loop.randomization import unit_hash
from shared.errors import Issue

PERMISSION_RANK = {"plan": 0, "default": 1, "acceptEdits": 2, "bypassPermissions": 3}
INITIAL_STEP = "initial"


@dataclass(frozen=True)
class Step:
    step_id: str
    decision_id: str
    question: Question
    rules: list[Rule]


def steps_of(selection: Selection) -> list[Step]:
    """The chain in order: the first decision, then each further step."""
    first = selection["decision"]
    chain = [Step(INITIAL_STEP, first["decisionId"], first["question"], first["rules"])]
    chain += [Step(s["id"], s["decisionId"], s["question"], s["rules"]) for s in selection["steps"]]
    return chain


def options(question: Question) -> list[str]:
    if question["type"] == "boolean":
        return ["true", "false"]
    return list(question.get("criteria", {}))


def answer_key(answer: Answer) -> str:
    value = answer["value"]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def condition_met(when: Condition, answer: Answer) -> bool:
    """A rule holds when the answer's value has a threshold and its probability reaches it."""
    if when["type"] != answer["type"]:
        return False
    threshold = when["thresholds"].get(answer_key(answer))
    return threshold is not None and answer["probability"] >= threshold


def target_of(rule: Rule, default: Target) -> Target:
    """The rule's target over the default. A rule's permission mode is never above the
    default's: `configuration_issues` refuses such a selection before it is stored."""
    return {
        "runtime": rule.get("runtime", default["runtime"]),
        "model": rule.get("model", default["model"]),
        "effort": rule.get("effort", default["effort"]),
        "permissionMode": rule.get("permissionMode", default["permissionMode"]),
        "fastMode": rule.get("fastMode", default["fastMode"]),
    }


def _issue(path: list[str | int], message: str) -> Issue:
    return {"path": path, "message": message, "code": "custom"}


def _decision_issues(path: list[str | int], decision: Decision, default: Target) -> list[Issue]:
    question = decision["question"]
    found: list[Issue] = []
    if question["type"] == "choice" and "criteria" not in question:
        found.append(_issue([*path, "question", "criteria"], "a choice question needs criteria"))
    if question["type"] == "boolean" and "criteria" in question:
        found.append(
            _issue([*path, "question", "criteria"], "a boolean question takes no criteria")
        )
    allowed = set(options(question))
    for index, rule in enumerate(decision["rules"]):
        where: list[str | int] = [*path, "rules", index]
        if rule["when"]["type"] != question["type"]:
            found.append(
                _issue([*where, "when", "type"], f"must be {question['type']}, the question's type")
            )
        unknown = sorted(set(rule["when"]["thresholds"]) - allowed)
        if unknown:
            found.append(
                _issue(
                    [*where, "when", "thresholds"],
                    f"not among the question's options: {', '.join(unknown)}",
                )
            )
        mode = rule.get("permissionMode")
        if mode is not None and PERMISSION_RANK[mode] > PERMISSION_RANK[default["permissionMode"]]:
            found.append(
                _issue(
                    [*where, "permissionMode"],
                    "may not be above the default target's permissionMode",
                )
            )
    return found


def configuration_issues(selection: Selection) -> list[Issue]:
    """What the schema cannot say: cross-field rules of a selection."""
    default = selection["default"]
    found = _decision_issues(["decision"], selection["decision"], default)
    seen: set[str] = {INITIAL_STEP}
    for index, step in enumerate(selection["steps"]):
        if step["id"] in seen:
            found.append(_issue(["steps", index, "id"], f"step id {step['id']!r} is used twice"))
        seen.add(step["id"])
        found += _decision_issues(["steps", index], step, default)
    return found


def target_key(target: Target) -> str:
    """A target as one string: what the outcome records and the report group by."""
    fast = "fast" if target["fastMode"] else "standard"
    return "|".join(
        (target["runtime"], target["model"], target["effort"], target["permissionMode"], fast)
    )


def held_rule(step: Step, answer: Answer) -> tuple[int, Rule] | None:
    """The first rule of the step that the answer meets, numbered from 1."""
    for index, rule in enumerate(step.rules, start=1):
        if condition_met(rule["when"], answer):
            return index, rule
    return None


def route_of(step: Step, index: int, answer: Answer) -> str:
    """Which rule held on which answer: `step/rule:answer` (`initial/1:true`)."""
    return route_of_threshold(step, index, answer_key(answer))


def route_of_threshold(step: Step, index: int, value: str) -> str:
    return f"{step.step_id}/{index}:{value}"


DEFAULT_ROUTE = "default"
FALLBACK_ROUTE = "fallback"
EXPLORED_ROUTE = "explored"


@dataclass(frozen=True)
class Choice:
    target: Target
    route: str


def choice_of(selection: Selection, answers: Mapping[str, Answer]) -> Choice | None:
    """What the selection's rules choose from the answers each step got; None when the
    walk reaches a step that has no answer."""
    default = selection["default"]
    for step in steps_of(selection):
        answer = answers.get(step.step_id)
        if answer is None:
            return None
        held = held_rule(step, answer)
        if held is not None:
            index, rule = held
            return Choice(target_of(rule, default), route_of(step, index, answer))
    return Choice(default.copy(), DEFAULT_ROUTE)


def explores(selection: Selection, session_id: str) -> bool:
    """Whether this session is in the selection's exploration share."""
    share = selection.get("exploration", {}).get("share", 0.0)
    return unit_hash("explore", session_id) < share


def draw_candidates(selection: Selection, chosen: Target) -> list[Target]:
    """What an exploring session's target is drawn among: every rule's target and the
    default, once each, whose permission mode does not exceed the one the rules chose."""
    ceiling = PERMISSION_RANK[chosen["permissionMode"]]
    default = selection["default"]
    found: dict[str, Target] = {}
    every = [target_of(rule, default) for step in steps_of(selection) for rule in step.rules]
    for target in [*every, default.copy()]:
        if PERMISSION_RANK[target["permissionMode"]] <= ceiling:
            found.setdefault(target_key(target), target)
    return list(found.values())


@dataclass(frozen=True)
class Draw:
    target: Target
    candidates: list[str]
    """The target keys an exploring session draws among."""
    propensity: float
    """The probability that the selection gives this target to this session."""


def drawn(selection: Selection, session_id: str, chosen: Target, explored: bool) -> Draw:
    """The target a session gets: the rules' choice, or in an exploring session one drawn
    among the candidates by a hash of its id; with the probability of what it got under
    the selection's mixture ((1 - share) on the rules' choice, share spread evenly)."""
    share = selection.get("exploration", {}).get("share", 0.0)
    candidates = draw_candidates(selection, chosen)
    target = chosen
    if explored:
        target = candidates[int(unit_hash("draw", session_id) * len(candidates))]
    same = target_key(target) == target_key(chosen)
    propensity = (1 - share if same else 0.0) + share / len(candidates)
    return Draw(target, [target_key(each) for each in candidates], propensity)


@dataclass(frozen=True)
class ThresholdChange:
    """One threshold of one rule moved: a candidate the report estimates."""

    step_id: str
    rule: int
    """Numbered from 1 within its step."""
    value: str
    before: float
    after: float

    def said(self) -> str:
        return (
            f"step {self.step_id}, rule {self.rule}: threshold for {self.value} "
            f"{self.before:g} -> {self.after:g}"
        )


THRESHOLD_MOVES = (-0.2, -0.1, 0.1, 0.2)
MAX_CHANGES = 40


def threshold_changes(selection: Selection) -> list[ThresholdChange]:
    """Each threshold moved by each of THRESHOLD_MOVES within [0, 1], in chain order, at
    most MAX_CHANGES."""
    found: list[ThresholdChange] = []
    for step in steps_of(selection):
        for index, rule in enumerate(step.rules, start=1):
            for value, before in rule["when"]["thresholds"].items():
                for move in THRESHOLD_MOVES:
                    after = round(before + move, 4)
                    if 0 <= after <= 1:
                        found.append(ThresholdChange(step.step_id, index, value, before, after))
    return found[:MAX_CHANGES]


def changed(selection: Selection, change: ThresholdChange) -> Selection:
    """The selection with one threshold moved (the rest shared, never modified)."""
    result = copy.deepcopy(selection)
    if change.step_id == INITIAL_STEP:
        rules = result["decision"]["rules"]
    else:
        rules = next(s for s in result["steps"] if s["id"] == change.step_id)["rules"]
    rules[change.rule - 1]["when"]["thresholds"][change.value] = change.after
    return result
