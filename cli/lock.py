"""`evidencia lock`: `requirements.lock`, every runtime dependency pinned with its hashes,
and `requirements-test.lock`, the same pins with the test tools added.

The deploy bundle ships the first as `requirements.txt`, so Cloud Build installs exactly
what the tests ran; `make` installs the second (then the project without its
dependencies), so every machine runs the same ruff, mypy and pytest. The test lock is
compiled under the runtime lock as a constraint, so the two never pin a package apart.
Both are generated with `uv` for the deployed runtime (Python 3.11, Linux x86_64) and
record a digest of what they were made from, so a change without `make lock` is caught.
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
TEST_LOCK = ROOT / "requirements-test.lock"
PYPROJECT = ROOT / "pyproject.toml"
DIGEST_PREFIX = "# pyproject dependencies sha256: "


def _project(pyproject: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(pyproject.read_text())["project"]
    return project


def dependencies_digest(pyproject: Path = PYPROJECT, extras: tuple[str, ...] = ()) -> str:
    project = _project(pyproject)
    wanted = {"dependencies": project["dependencies"], "python": project["requires-python"]}
    for extra in extras:
        wanted[extra] = project["optional-dependencies"][extra]
    return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()


def pins_of(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, version = line.split(" ")[0].split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def stale_reason(
    pyproject: Path = PYPROJECT, lock: Path = LOCK, extras: tuple[str, ...] = ()
) -> str | None:
    """Why `lock` does not match `pyproject.toml`, or None when it does."""
    if not lock.exists():
        return f"{lock.name} is missing"
    text = lock.read_text()
    if f"{DIGEST_PREFIX}{dependencies_digest(pyproject, extras)}" not in text:
        return f"pyproject.toml's dependencies changed since {lock.name} was written"
    pins = pins_of(text)
    project = _project(pyproject)
    wanted = [*project["dependencies"]]
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    for spec in wanted:
        requirement = Requirement(spec)
        version = pins.get(requirement.name.lower().replace("_", "-"))
        if version is None or version not in requirement.specifier:
            return f"{lock.name} does not pin {spec}"
    return None


LOCKS = ((LOCK, ()), (TEST_LOCK, ("test",)))
"""Each lock file and the extras it adds to the runtime dependencies."""


def _compiled(lock: Path, extras: tuple[str, ...]) -> str:
    """The lock compiled anew; uv keeps the pins it already holds where they still fit
    (it reads its output file first), so adding a dependency moves nothing else."""
    uv = Path(sys.executable).with_name("uv")
    command = [
        str(uv),
        "pip",
        "compile",
        str(PYPROJECT),
        "--generate-hashes",
        "--python-version=3.11",
        "--python-platform=x86_64-manylinux_2_28",
        "--no-header",
        "--quiet",
        "--output-file",
        str(lock),
    ]
    for extra in extras:
        command += ["--extra", extra, "--constraint", str(LOCK)]
    subprocess.run(command, capture_output=True, text=True, check=True)
    return lock.read_text()


def write(check: bool = False) -> int:
    if check:
        reasons = [
            reason for lock, extras in LOCKS if (reason := stale_reason(PYPROJECT, lock, extras))
        ]
        print("\n".join(reasons) or "requirements.lock and requirements-test.lock are current")
        return 1 if reasons else 0
    for lock, extras in LOCKS:
        what = "with the test tools" if extras else "of the deployed functions"
        header = (
            f"# Every dependency {what}, pinned with hashes.\n"
            "# Regenerate with `make lock` after changing pyproject.toml's dependencies.\n"
            f"{DIGEST_PREFIX}{dependencies_digest(PYPROJECT, extras)}\n"
        )
        lock.write_text(header + _compiled(lock, extras))
        print(f"wrote {lock}")
    return 0
