"""A folder's locked npm packages (`package-lock.json`), installed with `npm ci` from the
npm registry when they are missing or older than the lock: the real clients the suite
runs (the TypeScript MCP client, Claude Code, Gemini CLI). One process installs a folder
at a time: the test workers that need it wait for the first."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path


def npm_ci(folder: Path, needed_for: str) -> None:
    installed = folder / "node_modules" / ".package-lock.json"
    lock = folder / "package-lock.json"
    with lock.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
            return
        npm = shutil.which("npm")
        assert npm is not None, f"{needed_for} needs Node.js 20 or newer and npm"
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=folder, check=True, timeout=600
        )
