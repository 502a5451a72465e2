"""The selection's rules: what a configuration may say, and how answers pick a target."""

from __future__ import annotations

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
