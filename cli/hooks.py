"""`evidencia hooks install|uninstall|status`: bring the sessions a person starts by hand
(`claude` typed in a repository) into the loop, through the agent's own hooks.

    evidencia hooks install RUNTIME... --org ORG --agent AGENT [--print]
    evidencia hooks uninstall [RUNTIME...]
    evidencia hooks status [--json]

`install` reads `EVIDENCIA_URL` and `EVIDENCIA_TOKEN` (`agent:connect` and
`agent:psychologist`) from the environment and the agent's link from AgentConnect, keeps
them in Evidencia's own per-user file (`cli.hook.settings_file`, mode 0600), and writes
into the user's own settings of each agent the session-start hook that runs
`evidencia hook RUNTIME EVENT` and the agent's telemetry settings for the linked project
under the linked agent name. No agent file holds the token: Claude Code asks
`evidencia hook claude-code otel-headers` for it. Nothing else in those files changes,
and a setting the person already has with another value is refused, not overwritten.
`uninstall` puts each file back byte for byte when nobody changed it since, else takes
out exactly the entries install wrote. `--print` prints the entries for an
administrator's managed settings instead of writing anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import urllib.error
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

from cli import hook
from cli.launch import CLAUDE_CODE, ByEnvironment

USAGE, FAILED = 2, 1
MATCHER = "startup|resume|clear|compact"
"""Every way a Claude Code session starts or loses its context: the instructions again."""
HOOK_TIMEOUT_S = 5
"""The agent's own bound on the command (it answers within `hook.DEADLINE_S`)."""


class HooksError(Exception):
    """Said to the person as it is, exit 1."""


@dataclass(frozen=True)
class Linked:
    """What install keeps: where Evidencia is, the token, and the agent and its link."""

    url: str
    token: str
    org: str
    agent: str
    project: str | None
    project_agent: str | None

    @property
    def endpoint(self) -> str | None:
        if self.project is None:
            return None
        return f"{self.url.rstrip('/')}/projects/{urllib.parse.quote(self.project)}/otlp"


def command(*words: str) -> str:
    """The shell command a hook runs: this `evidencia`, whatever PATH the agent has."""
    script = Path(sys.argv[0]).resolve()
    head = [str(script)] if script.name == "evidencia" else [sys.executable, "-m", "cli.main"]
    return shlex.join([*head, *words])


def claude_dir() -> Path:
    """Claude Code's user settings folder (`CLAUDE_CONFIG_DIR`, else `~/.claude`)."""
    named = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(named) if named else Path.home() / ".claude"


def claude_entries(linked: Linked) -> dict[str, Any]:
    """What install adds to Claude Code's `settings.json`: the start hook, and, with a
    linked project, the telemetry settings the launcher gives it (its row of `RUNTIMES`)
    and the headers helper."""
    entries: dict[str, Any] = {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": MATCHER,
                    "hooks": [
                        {
                            "type": "command",
                            "command": command("hook", "claude-code", "SessionStart"),
                            "timeout": HOOK_TIMEOUT_S,
                        }
                    ],
                }
            ]
        }
    }
    telemetry = CLAUDE_CODE.telemetry
    if linked.endpoint is not None and isinstance(telemetry, ByEnvironment):
        agent = urllib.parse.quote(linked.project_agent or "")
        entries["env"] = {
            **telemetry.variables,
            telemetry.endpoint_variable: linked.endpoint,
            "OTEL_RESOURCE_ATTRIBUTES": f"gen_ai.agent.name={agent}",
        }
        entries["otelHeadersHelper"] = command("hook", "claude-code", "otel-headers")
    return entries


def merged(settings: dict[str, Any], entries: Mapping[str, Any], where: Path) -> dict[str, Any]:
    """`settings` with `entries` added; a key the person set to something else is refused."""
    result: dict[str, Any] = json.loads(json.dumps(settings))
    for key, value in entries.items():
        if key == "hooks":
            hooks = result.setdefault("hooks", {})
            for event, groups in value.items():
                kept = [g for g in hooks.get(event, []) if not ours(g)]
                hooks[event] = [*kept, *groups]
        elif key == "env":
            env = result.setdefault("env", {})
            for name, setting in value.items():
                if name in env and env[name] != setting:
                    raise HooksError(
                        f"{where} already sets env.{name} to {env[name]!r}: take it out (or "
                        "install without a linked project) and run install again"
                    )
                env[name] = setting
        elif key in result and result[key] != value and not ours_command(result[key]):
            raise HooksError(f"{where} already sets {key}: take it out and run install again")
        else:
            result[key] = value
    return result


def ours_command(text: Any) -> bool:
    """A command install wrote: `… evidencia hook RUNTIME EVENT` (or `-m cli.main hook …`)."""
    return (
        isinstance(text, str)
        and re.search(r"(evidencia|cli\.main) hook \S+ \S+$", text) is not None
    )


def ours(group: Any) -> bool:
    """A hook group install wrote (its command runs `evidencia hook`)."""
    hooks = group.get("hooks", []) if isinstance(group, dict) else []
    return any(ours_command(h.get("command")) for h in hooks if isinstance(h, dict))


def without(settings: dict[str, Any], entries: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` with what install added taken out, the rest as it is."""
    result: dict[str, Any] = json.loads(json.dumps(settings))
    for event in entries.get("hooks", {}):
        groups = [g for g in result.get("hooks", {}).get(event, []) if not ours(g)]
        if groups:
            result["hooks"][event] = groups
        elif "hooks" in result:
            result["hooks"].pop(event, None)
    if result.get("hooks") == {}:
        del result["hooks"]
    for name, value in entries.get("env", {}).items():
        if result.get("env", {}).get(name) == value:
            del result["env"][name]
    if result.get("env") == {}:
        del result["env"]
    if ours_command(result.get("otelHeadersHelper")):
        del result["otelHeadersHelper"]
    return result


def linked_of(org: str, agent: str) -> Linked:
    """The environment's URL and token, and the agent's link read from AgentConnect."""
    url, token = os.environ.get("EVIDENCIA_URL"), os.environ.get("EVIDENCIA_TOKEN")
    if not url or not token:
        raise HooksError(
            "EVIDENCIA_URL and EVIDENCIA_TOKEN must be set (the token with agent:connect and "
            "agent:psychologist)"
        )
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise HooksError(f"EVIDENCIA_URL must be an http or https URL, not {url!r}")
    config = {"url": url, "token": token}
    names = f"{urllib.parse.quote(org, safe='')}/agents/{urllib.parse.quote(agent, safe='')}"
    try:
        source = hook.call(config, "GET", f"/v1/orgs/{names}/outcome-source", None, 30)
    except urllib.error.HTTPError as error:
        if error.code != HTTPStatus.NOT_FOUND:
            said = error.read().decode(errors="replace")
            raise HooksError(
                f"Evidencia refused reading the agent's link ({error.code}): {said}"
            ) from error
        return Linked(url, token, org, agent, None, None)
    except OSError as error:
        raise HooksError(f"Evidencia at {url} cannot be reached: {error}") from error
    return Linked(url, token, org, agent, source["projectId"], source["agent"])


def install(runtimes: Sequence[str], org: str, agent: str, printed: bool) -> int:
    linked = linked_of(org, agent)
    entries = claude_entries(linked)
    if printed:
        print(json.dumps(entries, indent=2))
        return 0
    kept = hook.read_json(hook.settings_file()) or {}
    kept.update(
        {
            "url": linked.url,
            "token": linked.token,
            "org": org,
            "agent": agent,
            "project": linked.project,
            "projectAgent": linked.project_agent,
        }
    )
    installed = kept.setdefault("installed", {})
    for runtime in runtimes:
        path = claude_dir() / "settings.json"
        before = path.read_text() if path.exists() else None
        earlier = installed.get(runtime)
        if earlier is not None and earlier.get("file") == str(path):
            before = earlier.get("before")  # installed again: the first install's original
        current = json.loads(path.read_text()) if path.exists() else {}
        written = json.dumps(merged(current, entries, path), indent=2) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(written)
        installed[runtime] = {
            "file": str(path),
            "before": before,
            "after": written,
            "entries": entries,
        }
        what = "the session-start hook and telemetry" if linked.project else "the start hook"
        print(f"{hook.LABELS[runtime]}: {what} in {path}")
    hook.write_private(hook.settings_file(), kept)
    print(
        f"Sessions started by hand now register with org {org}, agent {agent}; the token is "
        f"in {hook.settings_file()} (yours alone)."
    )
    return 0


def uninstall(runtimes: Sequence[str]) -> int:
    kept = hook.read_json(hook.settings_file()) or {}
    installed = kept.get("installed", {})
    for runtime in runtimes or list(installed):
        found = installed.pop(runtime, None)
        if found is None:
            print(f"{hook.LABELS.get(runtime, runtime)}: nothing installed")
            continue
        path = Path(found["file"])
        now = path.read_text() if path.exists() else None
        if now == found["after"]:
            if found["before"] is None:
                path.unlink()
            else:
                path.write_text(found["before"])
            print(f"{hook.LABELS[runtime]}: {path} is as it was before install")
        elif now is not None:
            path.write_text(json.dumps(without(json.loads(now), found["entries"]), indent=2) + "\n")
            print(f"{hook.LABELS[runtime]}: took install's entries out of {path} (changed since)")
    if installed:
        hook.write_private(hook.settings_file(), kept)
    else:
        hook.settings_file().unlink(missing_ok=True)
    return 0


def reinstall(runtime: str, kept: Mapping[str, Any]) -> str:
    return f"evidencia hooks install {runtime} --org {kept.get('org')} --agent {kept.get('agent')}"


def status(as_json: bool) -> int:
    kept = hook.read_json(hook.settings_file()) or {}
    found: dict[str, Any] = {}
    for runtime, entry in kept.get("installed", {}).items():
        path = Path(entry["file"])
        settings = hook.read_json(path) or {}
        present = any(ours(g) for g in settings.get("hooks", {}).get("SessionStart", []))
        found[runtime] = {
            "file": str(path),
            "org": kept.get("org"),
            "agent": kept.get("agent"),
            "hook": present,
            "telemetry": bool(settings.get("env", {}).get("OTEL_EXPORTER_OTLP_ENDPOINT")),
            "runs": present,
            "fix": None if present else reinstall(runtime, kept),
        }
    if as_json:
        print(json.dumps(found))
        return 0
    if not found:
        print("No hooks installed: evidencia hooks install claude-code --org ORG --agent AGENT")
    for runtime, each in found.items():
        state = (
            "runs at each session start (user settings need no workspace trust)"
            if each["runs"]
            else f"missing from {each['file']}: {each['fix']}"
        )
        label = hook.LABELS[runtime]
        print(f"{label}: org {each['org']}, agent {each['agent']}, {each['file']}: {state}")
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="evidencia hooks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = root.add_subparsers(dest="verb", required=True)
    adding = verbs.add_parser("install", help="write the hooks and telemetry settings")
    adding.add_argument("runtimes", nargs="+", choices=["claude-code"])
    adding.add_argument("--org", required=True)
    adding.add_argument("--agent", required=True)
    adding.add_argument(
        "--print",
        action="store_true",
        dest="printed",
        help="print the entries for managed settings instead",
    )
    removing = verbs.add_parser("uninstall", help="take out exactly what install wrote")
    removing.add_argument("runtimes", nargs="*", help="every installed one when none is named")
    showing = verbs.add_parser(
        "status", help="what is installed, for which agent, and whether it runs"
    )
    showing.add_argument("--json", action="store_true")
    return root


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    try:
        if args.verb == "install":
            return install(args.runtimes, args.org, args.agent, args.printed)
        if args.verb == "uninstall":
            return uninstall(args.runtimes)
        return status(args.json)
    except HooksError as error:
        print(f"evidencia hooks: {error}", file=sys.stderr)
        return FAILED
