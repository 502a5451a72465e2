"""A folder's locked npm packages (`package-lock.json`), installed with `npm ci` from the
npm registry when they are missing or older than the lock: the real clients the suite
runs (the TypeScript MCP client, Claude Code, Gemini CLI). One process installs a folder
at a time: the test workers that need it wait for the first."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

TRIES = 2
"""A fresh clone's full run once saw `npm ci` of one folder exit 217 while other workers
installed the other folders from the same npm cache; run alone, it installs in seconds.
A second try, from an empty `node_modules`, rides over that; a failure past it is said
with npm's own words."""


def npm_ci(folder: Path, needed_for: str, scripts: bool = True) -> None:
    """`npm ci` in `folder` unless it is installed already; `scripts=False` runs no package's
    install script (`--ignore-scripts`)."""
    installed = folder / "node_modules" / ".package-lock.json"
    lock = folder / "package-lock.json"
    with lock.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
            return
        npm = shutil.which("npm")
        assert npm is not None, f"{needed_for} needs Node.js 20 or newer and npm"
        for _attempt in range(TRIES):
            done = subprocess.run(
                [
                    npm,
                    "ci",
                    "--prefer-offline",
                    "--no-audit",
                    "--no-fund",
                    "--silent",
                    *([] if scripts else ["--ignore-scripts"]),
                ],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode == 0:
                return
            shutil.rmtree(folder / "node_modules", ignore_errors=True)
        raise AssertionError(
            f"npm ci in {folder} failed {TRIES} times (exit {done.returncode}): {done.stderr}"
        )
