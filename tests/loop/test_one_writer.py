"""An agent's instructions have one writer: `functions.loop.instructions.add_version`. A
write of the agent document's `instructions` anywhere else in the deployed code (a dict
naming them, passed to a Firestore write directly or through a name) fails here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parents[2]
WRITER = ROOT / "functions" / "loop" / "instructions.py"
WRITES = {"set", "update", "create"}


def _names_instructions(node: ast.AST) -> bool:
    """A dict literal (inside the node) with an `instructions` or `instructions.*` key."""
    return any(
        isinstance(key, ast.Constant)
        and isinstance(key.value, str)
        and key.value.split(".")[0] == "instructions"
        for each in ast.walk(node)
        if isinstance(each, ast.Dict)
        for key in each.keys
    )


def _bound_dicts(function: ast.AST) -> set[str]:
    """Names the function binds to a value naming `instructions`."""
    bound = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _names_instructions(node.value):
                bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    return bound


def instructions_writes(source: str) -> list[int]:
    """The lines of Firestore writes (`.set`, `.update`, `.create`) whose data names
    `instructions`."""
    return sorted(set(_writes(ast.parse(source))))


def _writes(tree: ast.Module) -> Iterator[int]:
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.Module):
            continue
        bound = _bound_dicts(function)
        for call in ast.walk(function):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            if call.func.attr not in WRITES:
                continue
            data = [*call.args[1:], *(k.value for k in call.keywords)]
            if any(
                _names_instructions(arg)
                or any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(arg))
                for arg in data
            ):
                yield call.lineno


def deployed_sources() -> list[Path]:
    return sorted([*(ROOT / "functions").rglob("*.py"), *(ROOT / "shared").rglob("*.py")])


def test_only_the_loop_s_instructions_module_writes_an_agent_s_instructions() -> None:
    elsewhere = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in deployed_sources()
        if path != WRITER
        for line in instructions_writes(path.read_text())
    ]
    assert elsewhere == []
    assert instructions_writes(WRITER.read_text()), "the one writer's own writes are found"


def test_the_check_finds_a_write_through_a_name_as_the_old_adoption_made_it() -> None:
    source = (
        "def adopt(batch, agent_ref, stored):\n"
        "    changes = {'instructions': stored, 'running_trials.t': None}\n"
        "    batch.update(agent_ref, changes, option=None)\n"
    )
    assert instructions_writes(source) == [3]
