"""`evidencia lock`: `requirements.lock`, every runtime dependency pinned with its hashes.

The deploy bundle ships it as `requirements.txt`, so Cloud Build installs exactly what
the tests ran (`make` installs it first, then the project). It is generated with `uv` for
the deployed runtime (Python 3.11, Linux x86_64) and records a digest of
`pyproject.toml`'s dependencies, so a change there without `make lock` is caught.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
DIGEST_PREFIX = "# pyproject dependencies sha256: "


def _project(pyproject: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(pyproject.read_text())["project"]
    return project


def dependencies_digest(pyproject: Path = PYPROJECT) -> str:
    project = _project(pyproject)
    wanted = {"dependencies": project["dependencies"], "python": project["requires-python"]}
    return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()


def _pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, version = line.split(" ")[0].split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def stale_reason(pyproject: Path = PYPROJECT, lock: Path = LOCK) -> str | None:
    """Why the lock does not match `pyproject.toml`, or None when it does."""
    if not lock.exists():
        return "requirements.lock is missing"
    text = lock.read_text()
    if f"{DIGEST_PREFIX}{dependencies_digest(pyproject)}" not in text:
        return "pyproject.toml's dependencies changed since requirements.lock was written"
    pins = _pins(text)
    for spec in _project(pyproject)["dependencies"]:
        requirement = Requirement(spec)
        version = pins.get(requirement.name.lower().replace("_", "-"))
        if version is None or version not in requirement.specifier:
            return f"requirements.lock does not pin {spec}"
    return None


def write(check: bool = False) -> int:
    if check:
        reason = stale_reason()
        print(reason or "requirements.lock is current")
        return 1 if reason else 0
    uv = Path(sys.executable).with_name("uv")
    compiled = subprocess.run(
        [
            str(uv),
            "pip",
            "compile",
            str(PYPROJECT),
            "--generate-hashes",
            "--python-version=3.11",
            "--python-platform=x86_64-manylinux_2_28",
            "--no-header",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    header = (
        "# Every runtime dependency of the deployed functions, pinned with hashes.\n"
        "# Regenerate with `make lock` after changing pyproject.toml's dependencies.\n"
        f"{DIGEST_PREFIX}{dependencies_digest()}\n"
    )
    LOCK.write_text(header + compiled)
    print(f"wrote {LOCK}")
    return 0
