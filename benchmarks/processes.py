"""Functions started as processes of their own, as Cloud Functions starts them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import flask
import requests
from flask.testing import FlaskClient

from cli.emulator import free_port

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORK = str(Path(sys.executable).with_name("functions-framework"))
MAIN = "main.py"
FLOOR = "benchmarks/floor.py"

FirstRequest = Callable[[str], requests.Response]
"""The request that proves a started function answers, given its base URL."""


def function_client(source: str, target: str) -> FlaskClient:
    """`target` from `source` in this process, driven through Flask's test client."""
    import functions_framework

    app: flask.Flask = functions_framework.create_app(  # type: ignore[no-untyped-call]
        target=target, source=str(ROOT / source)
    )
    return app.test_client()


def _start(
    source: str, target: str, port: int, env: dict[str, str], core: int | None = None
) -> subprocess.Popen[bytes]:
    pinned = ["taskset", "--cpu-list", str(core)] if core is not None else []
    return subprocess.Popen(
        [*pinned, FRAMEWORK, "--source", source, "--target", target, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_answer(call: Callable[[], requests.Response], timeout: float = 60) -> requests.Response:
    """The first answer `call` gets once the server accepts connections."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextmanager
def served(source: str, target: str, env: dict[str, str], core: int | None = None) -> Iterator[str]:
    """The base URL of `target` served from `source` while the block runs (on `core`
    alone when one is given)."""
    port = free_port()
    process = _start(source, target, port, env, core)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answer(lambda: requests.get(url + "/", timeout=5))
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def cold_ms(source: str, target: str, env: dict[str, str], first: FirstRequest) -> float:
    """Milliseconds from starting the process to the answer of its first request."""
    port = free_port()
    started = time.perf_counter()
    process = _start(source, target, port, env)
    try:
        reply = wait_answer(lambda: first(f"http://127.0.0.1:{port}"))
        elapsed = (time.perf_counter() - started) * 1000
        if reply.status_code >= 500:
            raise RuntimeError(f"{target} failed its first request: {reply.text[:200]}")
        return elapsed
    finally:
        process.terminate()
        process.wait(timeout=10)
