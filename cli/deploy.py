"""`evidencia deploy`: every registry entry as its own gen2 Cloud Function, plus data rules,
routing, schedules, secrets and least-privilege identities.

The plan is computed from the registry (`functions/registry.json`) alone, so a new entry
is deployed without touching this module. `--dry-run` builds the bundle and prints every
command in order.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli import capacity, console
from cli.lock import LOCK
from cli.sizing import MAX_INSTANCES, PUBLIC_SIZING, SWEEP_SIZING, WORKER_SIZING, Sizing
from functions.registry import (
    ENTRIES,
    Entry,
    McpEntry,
    RestEntry,
    SweepEntry,
    TriggerEntry,
    public_entries,
)
from shared.config import WORKER_TIMEOUT_S
from shared.models import ANSWER_MODEL, DEFAULT_MODEL

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ("main.py", "functions", "shared", "schemas")
SECRET = "GEMINI_API_KEY"  # noqa: S105 - the name of the secret, not its value
RUNTIME = "python311"
APIS = (
    "cloudfunctions.googleapis.com",
    "run.googleapis.com",
    "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com",
    "eventarc.googleapis.com",
    "firestore.googleapis.com",
    "secretmanager.googleapis.com",
    "cloudscheduler.googleapis.com",
)
ACCOUNTS = {
    "api": "HTTP functions: Firestore only",
    "gemini": "functions that call Gemini: Firestore and the Gemini key",
    "trigger": "Eventarc: may invoke the document-created triggers only",
    "scheduler": "Cloud Scheduler: may invoke the scheduled jobs only",
}


@dataclass(frozen=True)
class Step:
    command: list[str]
    if_exists: list[str] | None = None
    """Run instead when the first command fails because the thing already exists."""

    def shell(self) -> str:
        line = shlex.join(self.command)
        return f"{line}  # if it exists: {shlex.join(self.if_exists)}" if self.if_exists else line


def sizing_of(entry: Entry) -> Sizing:
    if isinstance(entry, TriggerEntry):
        return WORKER_SIZING
    if isinstance(entry, SweepEntry):
        return SWEEP_SIZING
    return PUBLIC_SIZING


@dataclass(frozen=True)
class Target:
    project: str
    region: str
    firestore_location: str
    models: dict[str, str]
    """Each flow's model setting (`RESEARCH_GEMINI_MODEL`...) and the model it names."""
    max_instances: int | None = None
    """One cap for every function; None gives each the capacity model's."""

    def account(self, role: str) -> str:
        return f"evidencia-{role}@{self.project}.iam.gserviceaccount.com"

    def url(self, entry: Entry) -> str:
        return f"https://{self.region}-{self.project}.cloudfunctions.net/{entry.name}"


def hosting_rewrites(entries: tuple[Entry, ...], region: str) -> list[dict[str, Any]]:
    """Public paths onto their functions, so clients keep one base URL. Scheduled jobs
    are not routed: only Cloud Scheduler calls them."""
    return [
        {
            "source": re.sub(r"\{\w+\}", "*", entry.route),
            "function": {"functionId": entry.name, "region": region},
        }
        for entry in entries
        if isinstance(entry, RestEntry | McpEntry)
    ]


def build_bundle(
    out: Path, entries: tuple[Entry, ...] = ENTRIES, region: str = "us-central1"
) -> Path:
    """`out/source`: what each function runs; `out/firebase`: rules, indexes and routing."""
    if out.exists():
        shutil.rmtree(out)
    source = out / "source"
    source.mkdir(parents=True)
    for name in BUNDLED:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(
                origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(origin, source / name)
    shutil.copy2(LOCK, source / "requirements.txt")
    firebase = out / "firebase"
    shutil.copytree(console.CONSOLE, firebase / "public")
    (firebase / "public" / "404.html").write_text("Not found\n")
    for name in ("firestore.rules", "firestore.indexes.json"):
        shutil.copy2(ROOT / name, firebase / name)
    config = {
        "firestore": {"rules": "firestore.rules", "indexes": "firestore.indexes.json"},
        "hosting": {
            "public": "public",
            "headers": console.hosting_headers(),
            "rewrites": hosting_rewrites(entries, region),
        },
    }
    (firebase / "firebase.json").write_text(json.dumps(config, indent=2) + "\n")
    return out


def _project_role(target: Target, account: str, role: str) -> Step:
    return Step(
        [
            "gcloud",
            "projects",
            "add-iam-policy-binding",
            target.project,
            f"--member=serviceAccount:{target.account(account)}",
            f"--role={role}",
            "--condition=None",
        ]
    )


def _identity_steps(target: Target) -> list[Step]:
    project = f"--project={target.project}"
    steps = [Step(["gcloud", "services", "enable", *APIS, project])]
    for role, description in ACCOUNTS.items():
        steps.append(
            Step(
                [
                    "gcloud",
                    "iam",
                    "service-accounts",
                    "create",
                    f"evidencia-{role}",
                    f"--description={description}",
                    project,
                ],
                if_exists=[
                    "gcloud",
                    "iam",
                    "service-accounts",
                    "describe",
                    target.account(role),
                    project,
                ],
            )
        )
    project_roles = (
        ("api", "roles/datastore.user"),
        ("gemini", "roles/datastore.user"),
        ("trigger", "roles/eventarc.eventReceiver"),
    )
    steps += [_project_role(target, account, role) for account, role in project_roles]
    steps.append(
        Step(
            [
                "gcloud",
                "secrets",
                "add-iam-policy-binding",
                SECRET,
                f"--member=serviceAccount:{target.account('gemini')}",
                "--role=roles/secretmanager.secretAccessor",
                project,
            ]
        )
    )
    return steps


def _function_step(entry: Entry, target: Target, source: Path, caps: dict[str, int]) -> Step:
    calls_gemini = isinstance(entry, TriggerEntry) and entry.calls_gemini
    account = target.account("gemini" if calls_gemini else "api")
    sizing = sizing_of(entry)
    models = ",".join(f"{name}={model}" for name, model in target.models.items())
    env = f"GOOGLE_CLOUD_PROJECT={target.project},{models}"
    command = [
        "gcloud",
        "functions",
        "deploy",
        entry.name,
        "--gen2",
        f"--project={target.project}",
        f"--region={target.region}",
        f"--runtime={RUNTIME}",
        f"--source={source}",
        f"--entry-point={entry.name}",
        f"--service-account={account}",
        f"--set-env-vars={env},THREADS={sizing.concurrency}",
        "--min-instances=0",
        f"--max-instances={target.max_instances or capacity.instance_cap(entry.name, caps)}",
        f"--cpu={sizing.cpu}",
        f"--memory={sizing.memory}",
        f"--concurrency={sizing.concurrency}",
    ]
    if calls_gemini:
        command.append(f"--set-secrets={SECRET}={SECRET}:latest")
    if isinstance(entry, TriggerEntry):
        command += [
            "--trigger-event-filters=type=google.cloud.firestore.document.v1.created",
            "--trigger-event-filters=database=(default)",
            f"--trigger-event-filters-path-pattern=document={entry.document}",
            f"--trigger-location={target.firestore_location}",
            f"--trigger-service-account={target.account('trigger')}",
            "--retry",
            f"--timeout={WORKER_TIMEOUT_S}s",
            "--no-allow-unauthenticated",
        ]
    elif isinstance(entry, SweepEntry):
        command += ["--trigger-http", "--no-allow-unauthenticated", "--timeout=300s"]
    else:
        command += ["--trigger-http", "--allow-unauthenticated", "--timeout=60s"]
    return Step(command)


def _invoker_steps(entry: Entry, target: Target) -> list[Step]:
    if isinstance(entry, TriggerEntry):
        caller = target.account("trigger")
    elif isinstance(entry, SweepEntry):
        caller = target.account("scheduler")
    else:
        return []
    return [
        Step(
            [
                "gcloud",
                "functions",
                "add-invoker-policy-binding",
                entry.name,
                f"--region={target.region}",
                f"--project={target.project}",
                f"--member=serviceAccount:{caller}",
            ]
        )
    ]


def _schedule_step(entry: SweepEntry, target: Target) -> Step:
    job = f"evidencia-{entry.name.replace('_', '-')}"
    flags = [
        f"--project={target.project}",
        f"--location={target.region}",
        f"--schedule={entry.schedule}",
        f"--uri={target.url(entry)}",
        "--http-method=POST",
        f"--oidc-service-account-email={target.account('scheduler')}",
        f"--oidc-token-audience={target.url(entry)}",
    ]
    return Step(
        ["gcloud", "scheduler", "jobs", "create", "http", job, *flags],
        if_exists=["gcloud", "scheduler", "jobs", "update", "http", job, *flags],
    )


INDEX_WAIT_S = 1800
"""How long the deploy waits for Firestore to build its indexes before it stops."""


def _firebase_step(target: Target, firebase: Path, only: str) -> Step:
    return Step(
        [
            "firebase",
            "deploy",
            f"--project={target.project}",
            f"--config={firebase / 'firebase.json'}",
            f"--only={only}",
            "--non-interactive",
        ]
    )


def _indexes_ready_step(target: Target) -> Step:
    """Wait until no composite index is still being built: a query whose index is not
    READY is refused (FAILED_PRECONDITION), so no function may serve before then."""
    listing = shlex.join(
        [
            "gcloud",
            "firestore",
            "indexes",
            "composite",
            "list",
            f"--project={target.project}",
            "--format=value(state)",
        ]
    )
    script = (
        f"for _ in $(seq {INDEX_WAIT_S // 10}); do "
        f"states=$({listing}) || exit 1; "
        'printf %s "$states" | grep -qv READY || exit 0; sleep 10; done; '
        f'echo "indexes not READY after {INDEX_WAIT_S} s" >&2; exit 1'
    )
    return Step(["bash", "-c", script])


def plan(target: Target, out: Path, entries: tuple[Entry, ...] = ENTRIES) -> list[Step]:
    """Every command, in order: identities; rules and indexes, then a wait until every
    index is READY; functions and who may invoke them; routing and the console; the
    schedules last, so that nothing is called before what it calls exists."""
    source, firebase = out / "source", out / "firebase"
    steps = _identity_steps(target)
    steps.append(_firebase_step(target, firebase, "firestore:rules,firestore:indexes"))
    steps.append(_indexes_ready_step(target))
    caps = capacity.instance_caps()
    steps += [_function_step(entry, target, source, caps) for entry in entries]
    steps += [step for entry in entries for step in _invoker_steps(entry, target)]
    steps.append(_firebase_step(target, firebase, "hosting"))
    steps += [_schedule_step(entry, target) for entry in entries if isinstance(entry, SweepEntry)]
    return steps


def _run(step: Step, index: int, total: int) -> None:
    """Run one step, then say how it ended and how long it took, on one line."""
    print(f"[{index}/{total}] $ {shlex.join(step.command)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(step.command, check=False, capture_output=True, text=True)
    outcome = "done"
    if (
        done.returncode != 0
        and step.if_exists
        and "already exists" in (done.stderr + done.stdout).lower()
    ):
        done = subprocess.run(step.if_exists, check=False, capture_output=True, text=True)
        outcome = "updated"
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        print(f"[{index}/{total}] failed after {elapsed:.0f} s", flush=True)
        raise SystemExit(f"deploy stopped: {step.command[0]} exited {done.returncode}")
    print(f"[{index}/{total}] {outcome} in {elapsed:.0f} s", flush=True)


FLOW_MODELS = {
    "research": ("RESEARCH_GEMINI_MODEL", DEFAULT_MODEL),
    "psychologist": ("PSYCHOLOGIST_GEMINI_MODEL", DEFAULT_MODEL),
    "agentconnect": ("AGENTCONNECT_GEMINI_MODEL", ANSWER_MODEL),
}
"""Each flow's setting and its default, as `shared.config` reads them."""


def add_parser(subparsers: Any) -> None:
    deploy = subparsers.add_parser("deploy", help="deploy every function to Google Cloud")
    deploy.add_argument("--project", required=True, help="the Google Cloud project to deploy to")
    deploy.add_argument("--region", required=True, help="where the functions run, e.g. us-central1")
    deploy.add_argument("--firestore-location", help="the database's location (default: --region)")
    deploy.add_argument(
        "--gemini-model",
        help="the model of every flow not given its own below (default: each flow's own)",
    )
    for flow, (_, default) in FLOW_MODELS.items():
        deploy.add_argument(
            f"--{flow}-model", help=f"the model {flow}'s worker asks (default {default})"
        )
    deploy.add_argument(
        "--out",
        type=Path,
        default=ROOT / "build" / "deploy",
        help="where the bundle and the Firebase config are written",
    )
    deploy.add_argument(
        "--max-instances",
        type=int,
        help="one cap on every function's instances (default: each function's from the "
        f"capacity model at {capacity.CAP_SCALE}x with {capacity.CAP_HEADROOM:g}x headroom, "
        f"at least {MAX_INSTANCES})",
    )
    deploy.add_argument("--dry-run", action="store_true", help="build and print, deploy nothing")


def function_urls(target: Target) -> list[str]:
    """How to call each public HTTP function at its own URL: at `/` when its route takes
    no parameters, else at its public path under that URL (which carries the parameters)."""
    lines = []
    for entry in public_entries():
        path = entry.route if "{" in entry.route else "/"
        methods = ",".join(op.method for op in entry.operations)
        lines.append(f"{entry.name:32} {methods:4} {target.url(entry)}{path.rstrip('/') or '/'}")
    return lines


def flow_models(args: argparse.Namespace) -> dict[str, str]:
    """Each flow's model: its own flag, else `--gemini-model`, else the flow's default."""
    return {
        setting: getattr(args, f"{flow}_model") or args.gemini_model or default
        for flow, (setting, default) in FLOW_MODELS.items()
    }


def run(args: argparse.Namespace) -> int:
    target = Target(
        args.project,
        args.region,
        args.firestore_location or args.region,
        flow_models(args),
        args.max_instances,
    )
    out = build_bundle(args.out, region=args.region)
    print(f"# bundle: {out / 'source'}; firebase config: {out / 'firebase'}")
    steps = plan(target, out)
    if args.dry_run:
        for step in steps:
            print(step.shell())
    else:
        for tool in ("gcloud", "firebase"):
            if shutil.which(tool) is None:
                raise SystemExit(f"{tool} is not on PATH: install it, then run deploy again")
        for index, step in enumerate(steps, start=1):
            _run(step, index, len(steps))
    print("# function URLs, each with the path to call:")
    for line in function_urls(target):
        print(f"#   {line}")
    return 0
