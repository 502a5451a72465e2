"""The selection's rules: what a configuration may say, and how answers pick a target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TARGET_FIELDS = ("runtime", "model", "effort", "permissionMode", "fastMode")
PERMISSION_RANK = {"plan": 0, "default": 1, "acceptEdits": 2, "bypassPermissions": 3}
INITIAL_STEP = "initial"


@dataclass(frozen=True)
class Step:
    step_id: str
    decision_id: str
    question: dict[str, Any]
    rules: list[dict[str, Any]]


def steps_of(selection: dict[str, Any]) -> list[Step]:
    """The chain in order: the first decision, then each further step."""
    first = selection["decision"]
    chain = [Step(INITIAL_STEP, first["decisionId"], first["question"], first["rules"])]
    chain += [Step(s["id"], s["decisionId"], s["question"], s["rules"]) for s in selection["steps"]]
    return chain


def options(question: dict[str, Any]) -> list[str]:
    if question["type"] == "boolean":
        return ["true", "false"]
    return list(question.get("criteria", {}))


def answer_key(answer: dict[str, Any]) -> str:
    value = answer["value"]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def holds(when: dict[str, Any], answer: dict[str, Any]) -> bool:
    """A rule holds when the answer's value has a threshold and its probability reaches it."""
    if when["type"] != answer["type"]:
        return False
    threshold = when["thresholds"].get(answer_key(answer))
    return threshold is not None and answer["probability"] >= threshold


def target_of(rule: dict[str, Any], default: dict[str, Any]) -> dict[str, Any]:
    """The rule's target over the default. A rule's permission mode is never above the
    default's: `configuration_issues` refuses such a selection before it is stored."""
    return {field: rule.get(field, default[field]) for field in TARGET_FIELDS}


def _issue(path: list[Any], message: str) -> dict[str, Any]:
    return {"path": path, "message": message, "code": "custom"}


def _decision_issues(
    path: list[Any], decision: dict[str, Any], default: dict[str, Any]
) -> list[dict[str, Any]]:
    question = decision["question"]
    found = []
    if question["type"] == "choice" and "criteria" not in question:
        found.append(_issue([*path, "question", "criteria"], "a choice question needs criteria"))
    if question["type"] == "boolean" and "criteria" in question:
        found.append(
            _issue([*path, "question", "criteria"], "a boolean question takes no criteria")
        )
    allowed = set(options(question))
    for index, rule in enumerate(decision["rules"]):
        where = [*path, "rules", index]
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


def configuration_issues(selection: dict[str, Any]) -> list[dict[str, Any]]:
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
