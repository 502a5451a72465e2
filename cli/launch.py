"""`evidencia launch`: run a coding agent the way AgentConnect chose, observed by the
Psychologist, treated by its trial, ended truthfully.

    evidencia launch --org ORG --agent AGENT [--title TEXT] [--input JSON] [--json]
                     [-- ARGS FOR THE AGENT...]

`EVIDENCIA_URL` and `EVIDENCIA_TOKEN` (one token with `agent:connect` and
`agent:psychologist`) come from the environment. The launcher is a client of the public
API over HTTP and imports nothing from `functions/`:

1. refuses, before anything starts, an agent argument every runtime refuses; starts an
   AgentConnect session under a new UUID and reads the agent's outcome source;
2. waits for the frozen evaluation (progress on stderr), giving up after the worker's
   lease and a margin (`EVIDENCIA_LAUNCH_WAIT_S`, 210 s), having run nothing;
3. refuses an agent argument the chosen runtime refuses (it would override a chosen
   setting, or run another session); maps the target onto the runtime's own arguments
   through its row of `RUNTIMES` (a permission mode the runtime has no equal for is
   refused, never raised), adds the agent's standing instructions (the version the session
   start served), followed by a treatment arm's suggestion, to the runtime's instructions,
   and sends its telemetry to the linked project's OTLP endpoints under the linked agent
   name: through its environment (the bearer there only), or, for a runtime configured by
   its arguments alone that names its own session (Codex), through a loopback relay
   (`cli/relay.py`) that names the launched session on every record and alone holds the
   bearer;
4. logs one `session.started` event to the linked project, so that the session exists
   there whatever the agent's telemetry does, runs the agent, forwards SIGINT and SIGTERM
   to it, and ends the session by how it exited: `closed`, or `closed_abnormally` with
   `exit_code_N` or `signal_NAME` (`runtime_unavailable`, `target_unsupported` or
   `argument_refused` when it could not run); then exits with the agent's status.

The launcher's own exit codes, when the agent did not run: 2 for a usage error or an
argument that would override a chosen setting, 125 when the API refused or the choice was
not frozen in time, 126 when the runtime could not run the target, 127 when the runtime
is not installed. A signal's end is 128 + its number, as a shell reports it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from types import FrameType
from typing import IO, Any

from ulid import ULID

from cli.hook import instructions_added
from cli.relay import relaying

WAIT_S = 210.0
"""AgentConnect's worker lease (180 s by default, `AGENTCONNECT_LEASE_SECONDS`) and a
margin: an evaluation still not frozen by then is not waited for."""
FIRST_POLL_S, LONGEST_POLL_S = 0.2, 0.5
"""The wait first reads the evaluation 0.2 s after the start (a freeze takes about 0.1 s,
so that one read usually finds it frozen: no more reads than a listener's), then 1.5
times later each time, at most every 0.5 s, so at most half a second late."""
PROGRESS_EVERY_S = 5.0
HTTP_TIMEOUT_S = 30.0
USAGE, API_FAILED, UNSUPPORTED, NOT_INSTALLED = 2, 125, 126, 127
SESSION_STARTED = "session.started"

Template = tuple[str, ...]
"""Arguments carrying a value: `{value}` in one is replaced by the value as it is, `{toml}`
by the value as a TOML basic string (a `-c key=value` setting's value is read as TOML)."""


def filled(template: Template, value: str) -> list[str]:
    """The template's arguments carrying `value`."""
    return [
        part.replace("{toml}", toml_string(value))
        if "{toml}" in part
        else part.replace("{value}", value)
        for part in template
    ]


def toml_string(text: str) -> str:
    """`text` as a TOML basic string. JSON's escapes are TOML's; non-ASCII is kept as it is
    (TOML takes no `\\ud83d`-style halves), and DEL, which TOML wants escaped, is."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


@dataclass(frozen=True)
class Telemetry:
    """Where the agent's telemetry goes: the linked project and agent name."""

    base_url: str
    project: str
    agent: str

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/projects/{urllib.parse.quote(self.project)}/otlp"


@dataclass(frozen=True)
class ByEnvironment:
    """A runtime that reads its OTLP export from its environment: the bearer goes in
    `OTEL_EXPORTER_OTLP_HEADERS`, the agent name in `OTEL_RESOURCE_ATTRIBUTES`, and its
    own `session.id` is the launched session (its session flag)."""

    variables: Mapping[str, str]
    """Turning its export on (logs, metrics, traces)."""
    endpoint_variable: str
    """Naming the OTLP base URL (`…/v1/traces` etc. are appended)."""


@dataclass(frozen=True)
class ByRelay:
    """A runtime that reads its OTLP export from its configuration only and names its own
    session: its exporters are pointed at a loopback relay (`cli/relay.py`) that names the
    launched session and the agent on every record and holds the bearer."""

    exporters: Mapping[str, Template]
    """A signal's path (`/v1/logs`) → the arguments pointing its exporter at the relay (the
    value: the relay's URL for the signal)."""
    unlinked: Template
    """The arguments when no project is linked (its metrics would go to its vendor)."""


@dataclass(frozen=True)
class Runtime:
    """How one runtime takes a target, all of it data: its executable, the arguments each
    chosen setting becomes, how it takes extra instructions and telemetry, which of its
    arguments would override a choice, and where it takes its prompt."""

    name: str
    """The target's `runtime`."""
    label: str
    executable: str
    """Found on PATH unless `override` names another."""
    override: str
    model: Template
    permission: Template
    permission_modes: Mapping[str, str]
    """AgentConnect's permission mode → the runtime's own; a mode not here is refused."""
    session: Template | None
    """The launched session's id; None: the runtime names its own (its telemetry relays)."""
    effort: Template | None
    """None: the runtime has no such setting (said in the summary)."""
    efforts: frozenset[str]
    """The efforts it takes (another is refused)."""
    fast_mode: Template | None
    """Taking `on` or `off`; None: the runtime has none (said when chosen)."""
    instructions: Template
    """Carrying the instructions added (the standing instructions and a treatment arm's
    suggestion), or the folder holding `context_file`."""
    context_file: str | None
    """Set: the instructions added go in a file of this name in a folder made for the run
    (and removed after), and `instructions` carries the folder."""
    telemetry: ByEnvironment | ByRelay
    overriding: frozenset[str]
    """Agent flags refused: each would override a chosen setting, the session or its
    telemetry. A prefix ending in `-` refuses every flag it begins."""
    config_flags: frozenset[str] = frozenset()
    """Flags taking `KEY=VALUE` settings (Codex's `-c`)."""
    config_keys: frozenset[str] = frozenset()
    """Settings refused through `config_flags`, with every key beneath each (`otel.…`)."""
    valued: frozenset[str] = frozenset()
    """Its flags that take a value (the next argument, unless that begins with `-`)."""
    prompt_flags: frozenset[str] = frozenset()
    """Flags taking the prompt (`-p TEXT`)."""
    subcommands: frozenset[str] = frozenset()
    """An agent's first argument naming one of these keeps it first: the launcher's arguments
    follow it (`codex exec …`), and the next positional argument is the prompt."""
    refused_subcommands: frozenset[str] = frozenset()
    """Subcommands refused: each would run another session than the one chosen."""
    cleared: tuple[str, ...] = ()
    """Variables that would override a chosen setting from the environment, removed."""
    notes: Mapping[str, str] = field(default_factory=dict)
    """What docs/agentconnect.md's table says of a cell beyond what the row renders, by
    the cell's row there (`default`, `session`, `instructions`, `cleared`)."""


CLAUDE_CODE = Runtime(
    name="claude-code",
    label="Claude Code",
    executable="claude",
    override="EVIDENCIA_CLAUDE",
    model=("--model", "{value}"),
    permission=("--permission-mode", "{value}"),
    permission_modes={
        "plan": "plan",
        "default": "default",
        "acceptEdits": "acceptEdits",
        "bypassPermissions": "bypassPermissions",
    },
    session=("--session-id", "{value}"),
    effort=("--effort", "{value}"),
    efforts=frozenset({"low", "medium", "high", "xhigh", "max"}),
    fast_mode=("--fast-mode", "{value}"),
    instructions=("--append-system-prompt", "{value}"),
    context_file=None,
    telemetry=ByEnvironment(
        variables={
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_TRACES_EXPORTER": "otlp",
            "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        },
        endpoint_variable="OTEL_EXPORTER_OTLP_ENDPOINT",
    ),
    overriding=frozenset(
        {
            "--model",
            "--effort",
            "--permission-mode",
            "--dangerously-skip-permissions",
            "--allow-dangerously-skip-permissions",
            "--fast-mode",
            "--session-id",
            "--resume",
            "-r",
            "--continue",
            "-c",
            "--fork-session",
            "--append-system-prompt",
            "--append-system-prompt-file",
        }
    ),
    prompt_flags=frozenset({"-p", "--print"}),
    cleared=("CLAUDE_CODE_EFFORT_LEVEL", "ANTHROPIC_MODEL"),
    notes={"cleared": "they would override the choice"},
)
GEMINI_CLI = Runtime(
    name="gemini-cli",
    label="Gemini CLI",
    executable="gemini",
    override="EVIDENCIA_GEMINI",
    model=("--model", "{value}"),
    permission=("--approval-mode", "{value}"),
    permission_modes={
        "default": "default",
        "acceptEdits": "auto_edit",
        "bypassPermissions": "yolo",
        "plan": "plan",
    },
    session=("--session-id", "{value}"),
    effort=None,
    efforts=frozenset(),
    fast_mode=None,
    # An included directory is a workspace directory, and Gemini CLI loads the GEMINI.md of
    # every workspace directory as context sent with every prompt
    # (https://geminicli.com/docs/cli/gemini-md, "Environment and workspace context files").
    instructions=("--include-directories", "{value}"),
    context_file="GEMINI.md",
    notes={
        "instructions": "an included directory is a workspace directory, whose `GEMINI.md` "
        "Gemini CLI [loads as context with every prompt]"
        "(https://geminicli.com/docs/cli/gemini-md); removed after the run"
    },
    telemetry=ByEnvironment(
        variables={
            "GEMINI_TELEMETRY_ENABLED": "true",
            "GEMINI_TELEMETRY_TARGET": "local",
            "GEMINI_TELEMETRY_OTLP_PROTOCOL": "http",
            "GEMINI_TELEMETRY_TRACES_ENABLED": "true",
            "GEMINI_TELEMETRY_LOG_PROMPTS": "true",
        },
        endpoint_variable="GEMINI_TELEMETRY_OTLP_ENDPOINT",
    ),
    overriding=frozenset(
        {
            "--model",
            "-m",
            "--approval-mode",
            "--yolo",
            "-y",
            "--session-id",
            "--resume",
            "-r",
            "--session-file",
            "--telemetry-",
            "--telemetry",
        }
    ),
    valued=frozenset({"-p", "--prompt"}),
    prompt_flags=frozenset({"-p", "--prompt"}),
    cleared=("GEMINI_MODEL",),
)
CODEX = Runtime(
    name="codex",
    label="Codex",
    executable="codex",
    override="EVIDENCIA_CODEX",
    model=("-m", "{value}"),
    permission=("-s", "{value}"),
    permission_modes={
        "plan": "read-only",
        # `codex exec` never asks for approval: read-only is the one sandbox never freer
        # than asking.
        "default": "read-only",
        "acceptEdits": "workspace-write",
        "bypassPermissions": "danger-full-access",
    },
    session=None,
    effort=("-c", "model_reasoning_effort={toml}"),
    efforts=frozenset({"minimal", "low", "medium", "high", "xhigh"}),
    fast_mode=None,
    instructions=("-c", "developer_instructions={toml}"),
    context_file=None,
    telemetry=ByRelay(
        exporters={
            "/v1/logs": ("-c", 'otel.exporter={otlp-http={endpoint={toml},protocol="json"}}'),
            "/v1/traces": (
                "-c",
                'otel.trace_exporter={otlp-http={endpoint={toml},protocol="json"}}',
            ),
            "/v1/metrics": (
                "-c",
                'otel.metrics_exporter={otlp-http={endpoint={toml},protocol="json"}}',
            ),
        },
        unlinked=("-c", 'otel.metrics_exporter="none"'),
    ),
    overriding=frozenset(
        {
            "-m",
            "--model",
            "-s",
            "--sandbox",
            "--dangerously-bypass-approvals-and-sandbox",
            "--approve-for-me",
            "-p",
            "--profile",
            "--oss",
            "--remote",
        }
    ),
    config_flags=frozenset({"-c", "--config"}),
    # The keys the launcher sets, and `profile`, which is `-p`.
    config_keys=frozenset(
        {"model", "model_reasoning_effort", "sandbox_mode", "developer_instructions", "otel"}
        | {"profile"}
    ),
    valued=frozenset(
        {"-c", "--config", "--enable", "--disable", "--remote", "--remote-auth-token-env"}
        | {"-i", "--image", "-m", "--model", "--local-provider", "-p", "--profile"}
        | {"-s", "--sandbox", "-C", "--cd", "--add-dir", "--thread-source", "--color"}
        | {"--cyber-access-program", "--output-schema", "-o", "--output-last-message"}
        | {"-a", "--ask-for-approval"}
    ),
    subcommands=frozenset({"exec", "e"}),
    refused_subcommands=frozenset({"resume", "fork"}),
    notes={
        "default": "`codex exec` never asks for approval: read-only is the one sandbox never "
        "freer than asking",
        "session": "Codex names its own; the relay names the launched one on every record",
        "instructions": "a TOML string: `-c` values are read as TOML",
    },
)
RUNTIMES: dict[str, Runtime] = {
    runtime.name: runtime for runtime in (CLAUDE_CODE, GEMINI_CLI, CODEX)
}
"""The mapping table: a target's runtime → how it is run (docs/agentconnect.md#the-launcher).
Adding a runtime is a row here and a test."""


class LaunchError(Exception):
    """The launcher stops, with a sentence for stderr and its exit code."""

    def __init__(self, message: str, code: int = API_FAILED) -> None:
        super().__init__(message)
        self.code = code


class UnsupportedTargetError(Exception):
    """The runtime cannot run this target as chosen."""


# -- pure decisions -------------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    """One flag of the agent's arguments with its value, or a positional argument."""

    flag: str | None
    """None: a positional argument, `value`."""
    value: str | None


def flags_in(arg: str, valued: frozenset[str]) -> list[tuple[str, str | None]]:
    """The flags one argument sets, each with a value written in it: `--model=x`, `-m=x`,
    `-mx` when `-m` takes a value, and `-ab` setting `-a` and `-b`. None: a positional."""
    if not arg.startswith("-") or arg == "-":
        return []
    if arg.startswith("--"):
        name, equals, value = arg.partition("=")
        return [(name, value if equals else None)]
    flags: list[tuple[str, str | None]] = []
    for index, letter in enumerate(arg[1:], start=1):
        if not letter.isalnum():
            break
        name, rest = f"-{letter}", arg[index + 1 :]
        if name in valued or rest.startswith("="):
            return [*flags, (name, rest.removeprefix("=") or None)]
        flags.append((name, None))
    return flags


def words(args: Sequence[str], valued: frozenset[str]) -> list[Word]:
    """The agent's arguments as a runtime reads them, a valued flag taking the next
    argument when its value is not written in it (one beginning with `-` is a flag)."""
    found: list[Word] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        flags = flags_in(arg, valued)
        if not flags:
            found.append(Word(None, arg))
        for name, written in flags:
            following = args[index] if index < len(args) else "-"
            taken = written is None and name in valued and not following.startswith("-")
            index += taken
            found.append(Word(name, following if taken else written))
    return found


def leading(args: Sequence[str], runtime: Runtime) -> list[str]:
    """The agent's first positional argument and, when it is a subcommand, the next one."""
    positional = [w.value for w in words(args, runtime.valued) if w.flag is None and w.value]
    return positional[: 2 if positional[:1] and positional[0] in runtime.subcommands else 1]


def refused_argument(args: Sequence[str], runtime: Runtime) -> str | None:
    """The sentence refusing the first of the agent's arguments that would override what
    the launcher chooses for `runtime`, or run another session than the one chosen."""
    for word in words(args, runtime.valued):
        if word.flag is None:
            continue
        if flag_refused(word.flag, runtime):
            return refused_sentence(word.flag, runtime)
        key = config_key(word.value or "")
        if word.flag in runtime.config_flags and key_refused(key, runtime):
            return refused_sentence(f"{word.flag} {key}", runtime)
    for arg in leading(args, runtime):
        if arg in runtime.refused_subcommands:
            return (
                f"{arg} is refused: {runtime.label} would go on with another session, not "
                "the one chosen and recorded."
            )
    return None


def refused_everywhere(args: Sequence[str], runtimes: Iterable[Runtime]) -> str | None:
    """Before the choice: the first runtime's refusal when every runtime refuses the agent's
    arguments (after it, only the chosen runtime's refusal counts)."""
    said = [refused_argument(args, runtime) for runtime in runtimes]
    return said[0] if all(said) else None


def flag_refused(name: str, runtime: Runtime) -> bool:
    """Whether the runtime refuses the flag: named, or begun by a prefix ending in `-`."""
    return name in runtime.overriding or any(
        prefix.endswith("-") and name.startswith(prefix) for prefix in runtime.overriding
    )


def key_refused(key: str, runtime: Runtime) -> bool:
    """Whether the runtime refuses the setting: a refused key or one beneath it."""
    return any(key == refused or key.startswith(refused + ".") for refused in runtime.config_keys)


def config_key(setting: str) -> str:
    """The dotted key of a `KEY=VALUE` setting, spaces and TOML quotes removed."""
    key = setting.split("=", 1)[0]
    return ".".join(part.strip().strip("\"'") for part in key.split("."))


def refused_sentence(what: str, runtime: Runtime) -> str:
    return (
        f"{what} is refused: it would override what the launcher sets for {runtime.label} "
        "(the chosen model, effort, permission mode, fast mode, session, instructions or "
        "telemetry), and the recorded choice must be what ran."
    )


def prompt_of(args: Sequence[str], runtime: Runtime) -> str | None:
    """The prompt as `runtime` takes it: a prompt flag's value (`-p TEXT`), else the
    positional argument after its subcommand (`exec PROMPT`); `-` (stdin) is none."""
    for word in words(args, runtime.valued | runtime.prompt_flags):
        if word.flag in runtime.prompt_flags and word.value:
            return word.value
    after = leading(args, runtime)[1:]
    return after[0] if after and after[0] != "-" else None


def default_title(args: Sequence[str]) -> str:
    """The session's title when none is given: the agent's prompt as the first runtime to
    read one takes it (the choice is not made yet), else a name."""
    for runtime in RUNTIMES.values():
        prompt = " ".join((prompt_of(args, runtime) or "").split())
        if prompt:
            return prompt[:500]
    return "evidencia launch"


def chosen_args(
    runtime: Runtime, target: Mapping[str, Any], session_id: str
) -> tuple[list[str], list[str]]:
    """The arguments carrying the chosen settings, and what of the target the runtime has
    no setting for (said in the summary). Raises `UnsupportedTargetError` for a permission
    mode the runtime has no equal for, or an effort it does not take."""
    mode = target["permissionMode"]
    mapped = runtime.permission_modes.get(mode)
    if mapped is None:
        raise UnsupportedTargetError(
            f"{runtime.label} has no permission mode equal to {mode}, and the launcher "
            "never runs an agent with a freer one"
        )
    args = [*filled(runtime.model, target["model"]), *filled(runtime.permission, mapped)]
    args += filled(runtime.session, session_id) if runtime.session else []
    not_applied: list[str] = []
    if runtime.effort is None:
        not_applied.append(f"effort {target['effort']}: {runtime.label} has no effort setting")
    elif target["effort"] not in runtime.efforts:
        raise UnsupportedTargetError(
            f"{runtime.label} takes effort {', '.join(sorted(runtime.efforts))}, "
            f"not {target['effort']}"
        )
    else:
        args += filled(runtime.effort, target["effort"])
    if runtime.fast_mode is None:
        if target["fastMode"]:
            not_applied.append(f"fast mode: {runtime.label} has no fast mode")
    else:
        args += filled(runtime.fast_mode, "on" if target["fastMode"] else "off")
    return args, not_applied


def context_files(runtime: Runtime, text: str) -> dict[str, str]:
    """The files the launcher writes into its own folder for the run (never into the
    user's): the runtime's context file holding `text`, when it takes one and there is
    text to add."""
    return {runtime.context_file: text + "\n"} if text and runtime.context_file else {}


def instructions_args(runtime: Runtime, text: str, folder: Path) -> list[str]:
    """The arguments adding `text` to the agent's instructions; `folder` holds the
    runtime's context file, when it takes one."""
    if not text:
        return []
    return filled(runtime.instructions, str(folder) if runtime.context_file else text)


def agent_command(
    runtime: Runtime, executable: str, launcher_args: Sequence[str], agent_args: Sequence[str]
) -> list[str]:
    """The agent's command: the launcher's arguments before the agent's own, after the
    agent's subcommand when its first argument names one (`codex exec -m … PROMPT`)."""
    lead = list(agent_args[:1]) if agent_args[:1] and agent_args[0] in runtime.subcommands else []
    return [executable, *lead, *launcher_args, *agent_args[len(lead) :]]


def agent_environment(
    base: Mapping[str, str], runtime: Runtime, telemetry: Telemetry | None, token: str
) -> dict[str, str]:
    """The agent's environment: the caller's, without what would override a chosen
    setting and without the launcher's own token variable, plus the runtime's telemetry
    settings when a project is linked and the runtime reads them from its environment (the
    bearer in OTEL_EXPORTER_OTLP_HEADERS only)."""
    cleared = {*runtime.cleared, "EVIDENCIA_TOKEN"}
    env = {name: value for name, value in base.items() if name not in cleared}
    kind = runtime.telemetry
    if telemetry is None or not isinstance(kind, ByEnvironment):
        return env
    env.update(kind.variables)
    env[kind.endpoint_variable] = telemetry.endpoint
    # A literal space: the JavaScript exporters of Claude Code and Gemini CLI do not decode
    # `%20` in this list (a URL-safe token needs no escaping).
    env["OTEL_EXPORTER_OTLP_HEADERS"] = "Authorization=Bearer " + urllib.parse.quote(token)
    attribute = "gen_ai.agent.name=" + urllib.parse.quote(telemetry.agent)
    earlier = base.get("OTEL_RESOURCE_ATTRIBUTES", "")
    kept = [pair for pair in earlier.split(",") if pair and not pair.startswith("gen_ai.agent")]
    env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join([*kept, attribute])
    return env


def telemetry_args(runtime: Runtime, relay: str | None) -> list[str]:
    """The arguments pointing a relayed runtime's exporters at `relay` (its base URL), or,
    with no project linked, keeping its telemetry from its vendor; none for the others."""
    kind = runtime.telemetry
    if not isinstance(kind, ByRelay):
        return []
    if relay is None:
        return list(kind.unlinked)
    return [arg for path, args in kind.exporters.items() for arg in filled(args, relay + path)]


def route_of(evaluation: Mapping[str, Any]) -> str:
    """How the target was reached: `rule`, `explored`, `default` or `fallback`."""
    if str(evaluation.get("reason", "")).startswith("explored"):
        return "explored"
    return {"selected": "rule", "defaulted": "default"}.get(evaluation["outcome"], "fallback")


def end_of(returncode: int) -> tuple[str, str | None]:
    """The Psychologist session's end for the agent's exit: (state, cause)."""
    if returncode == 0:
        return "closed", None
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"sig{-returncode}"
        return "closed_abnormally", f"signal_{name.lower()}"
    return "closed_abnormally", f"exit_code_{returncode}"


def exit_status(returncode: int) -> int:
    """The launcher's exit status for the agent's: a signal's is 128 + its number."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class Plan:
    """What was chosen and how it runs, for the summary line."""

    session_id: str
    seq: int
    target: dict[str, Any]
    route: str
    trials: list[dict[str, Any]]
    telemetry: Telemetry | None
    instructions: dict[str, Any] | None = None
    """The standing instructions the session start served (`{version, text}`), or None."""
    not_applied: list[str] = field(default_factory=list)

    @property
    def instructions_version(self) -> int | None:
        return self.instructions["version"] if self.instructions else None

    def summary(self) -> str:
        target = self.target
        runtime = RUNTIMES.get(target["runtime"])
        settings = [target["model"]]
        if runtime is not None and runtime.effort is not None:
            settings.append(f"effort {target['effort']}")
        mode = target["permissionMode"]
        mapped = runtime.permission_modes.get(mode) if runtime else None
        settings.append(
            " ".join(filled(runtime.permission, mapped))
            if runtime and mapped and mapped != mode
            else f"permission mode {mode}"
        )
        if runtime is not None and runtime.fast_mode is not None:
            settings.append(f"fast mode {'on' if target['fastMode'] else 'off'}")
        settings += [f"{reason}, not applied" for reason in self.not_applied]
        version = self.instructions_version
        standing = "no instructions" if version is None else f"instructions v{version}"
        trials = ", ".join(f"trial {t['trialId']} {t['arm']}" for t in self.trials) or "no trial"
        where = (
            f"telemetry to project {self.telemetry.project} as {self.telemetry.agent}"
            if self.telemetry
            else "no telemetry: the agent has no outcome source linked"
        )
        return (
            f"evidencia launch: {target['runtime']} ({'; '.join(settings)}) by {self.route}; "
            f"{standing}; {trials}; {where}; session {self.session_id}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "event": "launched",
            "sessionId": self.session_id,
            "seq": self.seq,
            "target": self.target,
            "route": self.route,
            "instructionsVersion": self.instructions_version,
            "trials": [{"trialId": t["trialId"], "arm": t["arm"]} for t in self.trials],
            "telemetry": {"projectId": self.telemetry.project, "agent": self.telemetry.agent}
            if self.telemetry
            else None,
            "notApplied": self.not_applied,
        }


# -- the API ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Api:
    base_url: str
    token: str

    def call(
        self, method: str, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, Any]:
        """(status, parsed JSON body or None); raises `LaunchError` when no host answers."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - the operator's own EVIDENCIA_URL
            self.base_url + path, data=data, method=method
        )
        request.add_header("Authorization", f"Bearer {token or self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as reply:  # noqa: S310
                return reply.status, _json(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, _json(error.read())
        except OSError as error:
            raise LaunchError(f"no Evidencia host answered at {self.base_url}: {error}") from error


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


ISSUE_CHARS = 200
"""An issue's message is cut here: a schema's message quotes the value it refuses whole."""


def refusal(what: str, status: int, body: Any) -> LaunchError:
    """The API's refusal in words, each schema issue of a 400 on a line of its own (its
    path, then its message)."""
    said = body.get("message") if isinstance(body, dict) else None
    issues = body.get("issues") if isinstance(body, dict) else None
    lines = [f"{what} was refused ({status}): {said or 'no message'}"]
    for issue in issues if isinstance(issues, list) else []:
        if isinstance(issue, dict):
            path = ".".join(str(part) for part in issue.get("path") or []) or "(the body)"
            message = str(issue.get("message", ""))
            if len(message) > ISSUE_CHARS:
                message = message[: ISSUE_CHARS - 1] + "…"
            lines.append(f"  {path}: {message}")
    return LaunchError("\n".join(lines))


# -- the launch -------------------------------------------------------------------------


@dataclass
class Launcher:
    api: Api
    org: str
    agent: str
    environ: Mapping[str, str]
    stderr: IO[str]
    as_json: bool = False
    cwd: Path | None = None
    new_id: Callable[[], str] = field(default_factory=lambda: lambda: str(uuid.uuid4()))
    wait_s: float = WAIT_S

    def say(self, text: str, data: dict[str, Any] | None = None) -> None:
        if self.as_json and data is not None:
            print(json.dumps(data), file=self.stderr, flush=True)
        elif not self.as_json:
            print(text, file=self.stderr, flush=True)

    def agent_path(self, suffix: str) -> str:
        org, agent = urllib.parse.quote(self.org), urllib.parse.quote(self.agent)
        return f"/v1/orgs/{org}/agents/{agent}{suffix}"

    def start(self, title: str, task: dict[str, Any]) -> dict[str, Any]:
        session_id = self.new_id()
        body = {"sessionId": session_id, "title": title, "input": task, "startedBy": "launch"}
        status, started = self.api.call("POST", self.agent_path("/sessions"), body)
        if status != HTTPStatus.ACCEPTED:
            raise refusal("Starting the AgentConnect session", status, started)
        result: dict[str, Any] = started
        return result

    def outcome_source(self) -> Telemetry | None:
        status, source = self.api.call("GET", self.agent_path("/outcome-source"))
        if status == HTTPStatus.NOT_FOUND:
            return None
        if status != HTTPStatus.OK:
            raise refusal("Reading the agent's outcome source", status, source)
        return Telemetry(self.api.base_url, source["projectId"], source["agent"])

    def frozen(self, seq: int, session_token: str) -> dict[str, Any]:
        """The frozen evaluation, read with the session's own token until it is frozen."""
        path = self.agent_path(f"/model-evaluations/{seq}")
        started = time.monotonic()
        deadline, said = started + self.wait_s, started
        pause = FIRST_POLL_S
        self.say(f"evidencia launch: waiting for the choice of session seq {seq}")
        time.sleep(pause)
        while True:
            status, body = self.api.call("GET", path, token=session_token)
            if status == HTTPStatus.OK:
                evaluation: dict[str, Any] = body
                return evaluation
            if status != HTTPStatus.CONFLICT:
                raise refusal("Reading the evaluation", status, body)
            now = time.monotonic()
            if now + pause > deadline:
                raise LaunchError(
                    f"the choice was not frozen within {self.wait_s:g} s (the worker's lease "
                    "and a margin); nothing was run"
                )
            if now - said >= PROGRESS_EVERY_S:
                said = now
                self.say(f"evidencia launch: still waiting ({now - started:.0f} s)")
            time.sleep(pause)
            pause = min(pause * 1.5, LONGEST_POLL_S)

    def log_start(self, telemetry: Telemetry, plan: Plan) -> None:
        """One `session.started` event, so that the session exists in the project (its
        end needs it) whatever the agent's own telemetry does."""
        event = {
            "id": str(ULID()),
            "agent": telemetry.agent,
            "type": SESSION_STARTED,
            "at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "data": {
                "launcher": "evidencia launch",
                "seq": plan.seq,
                "runtime": plan.target["runtime"],
                "model": plan.target["model"],
                "route": plan.route,
            },
        }
        path = self.session_path(telemetry, plan.session_id, "/events")
        status, body = self.api.call("POST", path, {"events": [event]})
        if status != HTTPStatus.OK:
            raise refusal(f"Logging the session to project {telemetry.project}", status, body)

    def session_path(self, telemetry: Telemetry, session_id: str, suffix: str) -> str:
        project, session = urllib.parse.quote(telemetry.project), urllib.parse.quote(session_id)
        return f"/projects/{project}/sessions/{session}{suffix}"

    def end(self, plan: Plan, state: str, cause: str | None, exit_code: int | None) -> None:
        if plan.telemetry is not None:
            body = {"state": state, **({"cause": cause} if cause else {})}
            path = self.session_path(plan.telemetry, plan.session_id, "/end")
            status, reply = self.api.call("POST", path, body)
            if status not in (HTTPStatus.OK, HTTPStatus.CONFLICT):
                said = reply.get("message") if isinstance(reply, dict) else None
                self.say(f"evidencia launch: ending the session failed ({status}): {said}")
        ended = f"{state}{f' ({cause})' if cause else ''}"
        where = "" if plan.telemetry else " (not logged: no outcome source)"
        self.say(
            f"evidencia launch: the session ended {ended}{where}",
            {
                "event": "ended",
                "sessionId": plan.session_id,
                "state": state,
                "cause": cause,
                "exitCode": exit_code,
                "logged": plan.telemetry is not None,
            },
        )

    def executable(self, runtime: Runtime) -> str:
        chosen = self.environ.get(runtime.override)
        if chosen:
            if not os.access(chosen, os.X_OK):
                raise LaunchError(f"{runtime.override}={chosen} is not executable", NOT_INSTALLED)
            return chosen
        found = shutil.which(runtime.executable, path=self.environ.get("PATH", os.defpath))
        if found is None:
            raise LaunchError(
                f"{runtime.label} ({runtime.executable}) is not on PATH; install it, or name "
                f"it with {runtime.override}",
                NOT_INSTALLED,
            )
        return found

    def launch(self, title: str | None, task: dict[str, Any], agent_args: Sequence[str]) -> int:
        refused = refused_everywhere(agent_args, RUNTIMES.values())
        if refused is not None:
            raise LaunchError(refused, USAGE)
        started = self.start(title or default_title(agent_args), task)
        telemetry = self.outcome_source()
        evaluation = self.frozen(started["seq"], started["sessionToken"])
        target: dict[str, Any] = evaluation["target"]
        plan = Plan(
            started["sessionId"],
            started["seq"],
            target,
            route_of(evaluation),
            started["trials"],
            telemetry,
            started.get("instructions"),
        )
        runtime = RUNTIMES.get(target["runtime"])
        if runtime is None:
            known = ", ".join(RUNTIMES)
            reason = f"no runtime named {target['runtime']} (the launcher runs {known})"
            return self.unable(plan, reason, "runtime_unavailable", NOT_INSTALLED)
        refused = refused_argument(agent_args, runtime)
        if refused is not None:
            return self.unable(plan, refused, "argument_refused", USAGE)
        try:
            executable = self.executable(runtime)
            chosen, plan.not_applied = chosen_args(runtime, target, plan.session_id)
        except UnsupportedTargetError as error:
            return self.unable(plan, str(error), "target_unsupported", UNSUPPORTED)
        except LaunchError as error:
            return self.unable(plan, str(error), "runtime_unavailable", error.code)
        if telemetry is not None:
            self.log_start(telemetry, plan)
        self.say(plan.summary(), plan.as_json())
        try:
            returncode = self.run(runtime, [executable, *chosen], plan, agent_args)
        except OSError as error:
            reason = f"{runtime.label} could not start: {error}"
            return self.unable(plan, reason, "runtime_unavailable", UNSUPPORTED)
        state, cause = end_of(returncode)
        self.end(plan, state, cause, returncode)
        return exit_status(returncode)

    def run(
        self, runtime: Runtime, chosen: Sequence[str], plan: Plan, agent_args: Sequence[str]
    ) -> int:
        """Run the agent (`chosen`: its executable and the chosen settings) with the standing
        instructions and a treatment arm's suggestion added, and its telemetry to the
        project, to its end; its return code."""
        text = instructions_added(plan.instructions, plan.trials)
        with ExitStack() as stack:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evidencia-")))
            for name, content in context_files(runtime, text).items():
                (folder / name).write_text(content)
            relay = stack.enter_context(self.relay(runtime, plan))
            added = instructions_args(runtime, text, folder)
            added += telemetry_args(runtime, relay)
            executable, *settings = chosen
            command = agent_command(runtime, executable, [*settings, *added], agent_args)
            env = agent_environment(self.environ, runtime, plan.telemetry, self.api.token)
            return run_agent(command, env, self.cwd)

    def relay(self, runtime: Runtime, plan: Plan) -> AbstractContextManager[str | None]:
        """The loopback relay for the run's telemetry (its URL), when the runtime's goes
        through one and a project is linked; else None."""
        if plan.telemetry is None or not isinstance(runtime.telemetry, ByRelay):
            return nullcontext(None)
        to = plan.telemetry
        return relaying(to.endpoint, self.api.token, plan.session_id, to.agent)

    def unable(self, plan: Plan, reason: str, cause: str, code: int) -> int:
        """The agent could not run: say why and end the session abnormally."""
        self.say(plan.summary(), plan.as_json())
        self.say(
            f"evidencia launch: {reason}",
            {"event": "unable", "sessionId": plan.session_id, "reason": reason},
        )
        if plan.telemetry is not None:
            self.log_start(plan.telemetry, plan)
        self.end(plan, "closed_abnormally", cause, None)
        return code


def in_foreground() -> bool:
    """Whether this process leads the terminal's foreground: a Ctrl-C there reaches the
    agent (same process group) without being forwarded."""
    try:
        with Path("/dev/tty").open() as tty:
            return os.tcgetpgrp(tty.fileno()) == os.getpgrp()
    except OSError:
        return False


def run_agent(command: Sequence[str], env: Mapping[str, str], cwd: Path | None) -> int:
    """Run the agent to its end, forwarding SIGINT and SIGTERM to it; its return code
    (negative: the signal that ended it)."""
    agent = subprocess.Popen(list(command), env=dict(env), cwd=cwd)
    foreground = in_foreground()

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and foreground:
            return
        agent.send_signal(signum)

    handled = (signal.SIGINT, signal.SIGTERM)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, forward) for sig in handled} if main_thread else {}
    try:
        return agent.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# -- the command ------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="evidencia launch",
        description="Run a coding agent as AgentConnect chooses, its telemetry to the "
        "Psychologist, its standing instructions and its trial's suggestion applied, its "
        "session ended by its exit. "
        "Reads EVIDENCIA_URL and EVIDENCIA_TOKEN.",
        epilog="Arguments after -- go to the agent unchanged, except those that would "
        "override a chosen setting, which are refused.",
    )
    command.add_argument("--org", required=True, help="the AgentConnect org")
    command.add_argument("--agent", required=True, help="the agent's id in the org")
    command.add_argument(
        "--title", help="the session's title (default: the agent's -p prompt)", default=None
    )
    command.add_argument(
        "--input", default="{}", help="the session's input, a JSON object (the task)"
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print the summary and the end on stderr as JSON lines (stdout stays the agent's)",
    )
    return command


def checked(url: str, token: str, given: str) -> dict[str, Any]:
    """The session's input, once the settings are there; raises `LaunchError` (usage)."""
    if not url or not token:
        raise LaunchError(
            "set EVIDENCIA_URL and EVIDENCIA_TOKEN (a token with agent:connect and "
            "agent:psychologist)",
            USAGE,
        )
    try:
        task = json.loads(given)
    except ValueError as error:
        raise LaunchError(f"--input is not JSON: {error}", USAGE) from error
    if not isinstance(task, dict):
        raise LaunchError("--input must be a JSON object", USAGE)
    return task


def main(
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    stderr: IO[str] | None = None,
    cwd: Path | None = None,
    new_id: Callable[[], str] | None = None,
) -> int:
    """`evidencia launch ARGV`; the agent's exit status, or the launcher's own code."""
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser().parse_args(argv[:split])
    agent_args = argv[split + 1 :]
    environ = os.environ if environ is None else environ
    stderr = stderr or sys.stderr
    url, token = environ.get("EVIDENCIA_URL", ""), environ.get("EVIDENCIA_TOKEN", "")
    try:
        task = checked(url, token, args.input)
        launcher = Launcher(
            Api(url.rstrip("/"), token),
            args.org,
            args.agent,
            environ,
            stderr,
            as_json=args.json,
            cwd=cwd,
            wait_s=float(environ.get("EVIDENCIA_LAUNCH_WAIT_S", WAIT_S)),
        )
        if new_id is not None:
            launcher.new_id = new_id
        return launcher.launch(args.title, task, agent_args)
    except LaunchError as error:
        if args.json:
            print(json.dumps({"event": "error", "message": str(error)}), file=stderr)
        else:
            print(f"evidencia launch: {error}", file=stderr)
        return error.code
