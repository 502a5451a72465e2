"""The Cloud Firestore emulator from the Google Cloud SDK, run as a plain Java process."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import IO

JAR_IN_SDK = Path("platform/cloud-firestore-emulator/cloud-firestore-emulator.jar")
MAIN_CLASS = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"
PROJECT_ID = "demo-evidencia"
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""A local emulator serves one developer or one test worker: the quick compiler alone and
the serial collector halve the CPU it takes over a test run, where the optimising
compiler's and the parallel collector's threads cost more than they ever win back."""


class EmulatorError(RuntimeError):
    pass


class PortTakenError(EmulatorError):
    """The JVM could not bind the emulator's port: another process holds it."""


BIND_FAILED = "java.net.BindException"
"""What the emulator's log says when its port is already bound by another process."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _gcloud_sdk_root(gcloud: str) -> Path | None:
    try:
        printed = subprocess.run(
            [gcloud, "info", "--format=value(installation.sdk_root)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(printed) if printed else None


def find_jar() -> Path:
    """The emulator jar: `FIRESTORE_EMULATOR_JAR`, else under the Cloud SDK `gcloud` belongs to.

    The SDK root is where `gcloud` resolves to (fast); `gcloud info` is asked only when
    that layout does not hold the jar.
    """
    override = os.environ.get("FIRESTORE_EMULATOR_JAR")
    if override:
        if Path(override).is_file():
            return Path(override)
        raise EmulatorError(f"FIRESTORE_EMULATOR_JAR points at {override}, which is not a file.")
    gcloud = shutil.which("gcloud")
    if gcloud:
        jar = Path(gcloud).resolve().parent.parent / JAR_IN_SDK
        if jar.is_file():
            return jar
        root = _gcloud_sdk_root(gcloud)
        if root is not None and (root / JAR_IN_SDK).is_file():
            return root / JAR_IN_SDK
    raise EmulatorError(
        "The Cloud Firestore emulator jar was not found. Install the Google Cloud SDK and run "
        "'gcloud components install cloud-firestore-emulator' (or 'apt-get install "
        "google-cloud-cli-firestore-emulator'), or set FIRESTORE_EMULATOR_JAR to the jar."
    )


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise EmulatorError(
            "Java was not found on PATH. The Firestore emulator needs Java 11 or newer "
            "(e.g. 'apt-get install openjdk-17-jre-headless')."
        )
    return java


REQUEST_TIMEOUT_S = 30
"""A bound on one call to the emulator's own API: it answers in milliseconds, but a JVM
starting beside a busy machine's other emulators (two hosts side by side under the whole
suite) once took past 10 s to register a trigger."""


def _request(method: str, url: str, body: bytes | None = None) -> bytes:
    request = urllib.request.Request(url, data=body, method=method)  # noqa: S310 - loopback only
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", "Bearer owner")
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:  # noqa: S310
        data: bytes = response.read()
        return data


@dataclass
class Emulator:
    host: str
    project_id: str = PROJECT_ID
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until this emulator serves. One this object started must also have said in
        its log that it bound its port: an answer on the port alone may come from another
        process that took the port first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                if BIND_FAILED in self._log():
                    raise PortTakenError(f"Port {self.port} is in use by another process.")
                raise EmulatorError(f"The Firestore emulator exited early: {self._log_tail()}")
            if self._bound() and self._answers():
                return
            time.sleep(0.1)
        raise EmulatorError(f"The Firestore emulator did not answer within {timeout:.0f} s.")

    def _bound(self) -> bool:
        return self.log is None or self.bound_line in self._log()

    def _answers(self) -> bool:
        try:
            _request("GET", self.base_url + "/")
        except (urllib.error.URLError, OSError):
            return False
        return True

    @property
    def port(self) -> int:
        return int(self.host.rsplit(":", 1)[1])

    @property
    def bound_line(self) -> str:
        """What the emulator prints once it has bound its port, and not before."""
        return f"API endpoint: {self.base_url}"

    def _log(self) -> str:
        if self.log is None:
            return ""
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")

    def _log_tail(self) -> str:
        return self._log()[-2000:]

    def document_exists(self, path: str) -> bool:
        """Whether the document at `path` (relative to the database root) exists."""
        url = f"{self.base_url}/v1/projects/{self.project_id}/databases/(default)/documents/{path}"
        try:
            _request("GET", url)
        except urllib.error.HTTPError as error:
            if error.code == HTTPStatus.NOT_FOUND:
                return False
            raise
        return True

    def export(self, directory: Path, name: str) -> Path:
        """Write every document to `directory/name` with the emulator's own export (the
        Firebase CLI's `--export-on-exit` asks the same endpoint); returns its metadata
        file, which `--import-data` reads back."""
        directory.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {
                "database": f"projects/{self.project_id}/databases/(default)",
                "export_directory": str(directory.resolve()),
                "export_name": name,
            }
        ).encode()
        _request("POST", f"{self.base_url}/emulator/v1/projects/{self.project_id}:export", body)
        return directory / name / f"{name}.overall_export_metadata"

    def reset(self) -> None:
        _request(
            "DELETE",
            f"{self.base_url}/emulator/v1/projects/{self.project_id}/databases/(default)/documents",
        )

    def register_trigger(self, trigger_id: str, document_pattern: str) -> None:
        body = (
            '{"eventType": "google.cloud.firestore.document.v1.created",'
            ' "database": "(default)", "namespace": "(default)",'
            f' "document": {{"value": "{document_pattern}", "matchType": "PATH_PATTERN"}}}}'
        ).encode()
        _request(
            "POST",
            f"{self.base_url}/emulator/v1/projects/{self.project_id}/eventarcTrigger"
            f"?eventarcTriggerId={trigger_id}",
            body,
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.log is not None:
            self.log.close()


def command(
    jar: str, java: str, port: int, functions_port: int | None, seed: Path | None = None
) -> list[str]:
    """The command line that starts the emulator, delivering triggers to `functions_port`
    and holding the documents of the export whose metadata file is `seed`."""
    line = [
        java,
        "-Duser.language=en",
        *JVM_OPTIONS,
        "-cp",
        jar,
        MAIN_CLASS,
        "start",
        "--host=127.0.0.1",
        f"--port={port}",
        f"--project_id={PROJECT_ID}",
    ]
    if functions_port is not None:
        line.append(f"--functions_emulator=127.0.0.1:{functions_port}")
    if seed is not None:
        line.append(f"--import-data={seed}")
    return line


PORT_ATTEMPTS = 3
"""How many free ports `start` tries: a port found free can be taken by another process
(another test worker's emulator, an outgoing connection) before the JVM binds it."""


def start(
    port: int | None = None,
    functions_port: int | None = None,
    seed: Path | None = None,
    own_session: bool = False,
) -> Emulator:
    """Start the emulator from its jar (no gcloud wrapper, so stopping it stops the JVM),
    holding the documents of the export `seed` when one is given. In a session of its own
    (`own_session`), a terminal's Ctrl-C, sent to the whole foreground process group,
    reaches only its starter, which must then stop it (a host that keeps its data exports
    it first); otherwise it stops with the terminal's Ctrl-C like its starter. Without a
    `port`, it takes a free one, and another when that one was taken before the JVM bound
    it."""
    jar, java = find_jar(), find_java()
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return _start_on(port or free_port(), jar, java, functions_port, seed, own_session)
        except PortTakenError:
            if port is not None or attempt == PORT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _start_on(
    port: int,
    jar: Path,
    java: str,
    functions_port: int | None,
    seed: Path | None,
    own_session: bool,
) -> Emulator:
    command_line = command(str(jar), java, port, functions_port, seed)
    log = tempfile.NamedTemporaryFile(prefix="firestore-emulator-", suffix=".log", delete=False)  # noqa: SIM115 - closed by Emulator.stop
    process = subprocess.Popen(
        command_line, stdout=log, stderr=subprocess.STDOUT, start_new_session=own_session
    )
    emulator = Emulator(host=f"127.0.0.1:{port}", process=process, log=log)
    try:
        emulator.wait_ready()
    except BaseException:
        emulator.stop()
        raise
    return emulator


KEPT = "firestore"
"""The export a data folder keeps: `FOLDER/firestore/firestore.overall_export_metadata`."""


@dataclass(frozen=True)
class DataFolder:
    """Where a local host keeps its emulator's documents between runs: the emulator's own
    export, written when the host stops and imported when the next one starts."""

    path: Path

    @property
    def seed(self) -> Path:
        return self.path / KEPT / f"{KEPT}.overall_export_metadata"

    def kept(self) -> Path | None:
        """The metadata file of the data kept by the last run, if there is any."""
        return self.seed if self.seed.is_file() else None

    def wipe(self) -> None:
        shutil.rmtree(self.path / KEPT, ignore_errors=True)

    def keep(self, emulator: Emulator) -> None:
        """Export the emulator's documents, then put them in place of the last run's: the
        old copy stays whole until the new one is complete."""
        self.path.mkdir(parents=True, exist_ok=True)
        ignore = self.path / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# the local host's Firestore data (make run), never committed\n*\n")
        staging = Path(tempfile.mkdtemp(prefix=".export-", dir=self.path))
        try:
            emulator.export(staging, KEPT)
            self.wipe()
            (staging / KEPT).rename(self.path / KEPT)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
