"""`evidencia runtimes`: the launcher's table in `docs/agentconnect.md`, rendered from the
rows of `RUNTIMES` in `cli/launch.py`, so that the page says what the launcher does.
`--check` fails when the page's table is not the rows'."""

from __future__ import annotations

from collections.abc import Callable

from cli.launch import RUNTIMES, ByEnvironment, Runtime, Template
from cli.page_table import ROOT, write_between

TARGET = ROOT / "docs" / "agentconnect.md"
BEGIN = "<!-- the launcher's table: `evidencia runtimes` writes it from RUNTIMES -->"
END = "<!-- end of the launcher's table -->"
INDENT = "   "
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
"""The order efforts are listed in."""
MODES = ("default", "acceptEdits", "bypassPermissions", "plan")
SAMPLES = {"{value}": "…", "{toml}": '"…"'}


def _code(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _template(template: Template, value: str) -> str:
    """The arguments as written, `{value}` shown as `value` and `{toml}` quoted."""
    parts = [part.replace("{value}", value).replace("{toml}", f'"{value}"') for part in template]
    return f"`{' '.join(parts)}`"


def _noted(text: str, runtime: Runtime, cell: str) -> str:
    note = runtime.notes.get(cell)
    return f"{text} ({note})" if note else text


def _effort(runtime: Runtime) -> str:
    if runtime.effort is None:
        return "none: the summary says it was not applied"
    efforts = [effort for effort in EFFORTS if effort in runtime.efforts]
    return f"{_template(runtime.effort, '…')} ({_code(efforts)}; another is refused)"


def _permission(mode: str) -> Callable[[Runtime], str]:
    def cell(runtime: Runtime) -> str:
        own = runtime.permission_modes.get(mode)
        if own is None:
            return "refused"
        return _noted(_template(runtime.permission, own), runtime, mode)

    return cell


def _fast_mode(runtime: Runtime) -> str:
    if runtime.fast_mode is None:
        return "none: the summary says so when it was chosen"
    return f"{_template(runtime.fast_mode, 'on')} / `off`"


def _session(runtime: Runtime) -> str:
    if runtime.session is None:
        note = runtime.notes.get("session")
        return f"none: {note}" if note else "none"
    return _template(runtime.session, "SESSION")


def _instructions(runtime: Runtime) -> str:
    if runtime.context_file is not None:
        text = f"`{runtime.context_file}` in a folder of its own, "
        text += _template(runtime.instructions, "FOLDER")
    else:
        text = _template(runtime.instructions, "TEXT")
    return _noted(text, runtime, "instructions")


def _telemetry(runtime: Runtime) -> str:
    telemetry = runtime.telemetry
    if isinstance(telemetry, ByEnvironment):
        set_ = [f"{name}={value}" for name, value in telemetry.variables.items()]
        return _code([*set_, telemetry.endpoint_variable])
    exporters = [
        f"{_template(template, 'RELAY' + path)}" for path, template in telemetry.exporters.items()
    ]
    unlinked = _template(telemetry.unlinked, "")
    return (
        f"{'; '.join(exporters)}, to the loopback relay below; with no project linked, {unlinked}"
    )


def _cleared(runtime: Runtime) -> str:
    return _noted(_code(list(runtime.cleared)), runtime, "cleared") if runtime.cleared else "none"


def _arguments(runtime: Runtime) -> str:
    if not runtime.subcommands:
        return "first"
    named = _code(sorted(runtime.subcommands))
    return f"after the subcommand ({named}) when the agent's arguments begin with one, else first"


def _prompt(runtime: Runtime) -> str:
    flags = [f"`{flag} TEXT`" for flag in sorted(runtime.prompt_flags, key=len)]
    if runtime.subcommands:
        flags.append("the first positional argument after the subcommand")
    return ", ".join(flags)


ROWS: tuple[tuple[str, Callable[[Runtime], str]], ...] = (
    ("executable", lambda r: f"`{r.executable}` (`{r.override}`)"),
    ("`model`", lambda r: _template(r.model, "…")),
    ("`effort`", _effort),
    *((f"`permissionMode` `{mode}`", _permission(mode)) for mode in MODES),
    ("`fastMode`", _fast_mode),
    ("the session", _session),
    ("the instructions added (step 3)", _instructions),
    ("telemetry", _telemetry),
    ("removed from its environment", _cleared),
    ("where the launcher's arguments go", _arguments),
    ("the prompt (for the title)", _prompt),
)


def _line(cells: list[str]) -> str:
    return INDENT + "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render() -> str:
    runtimes = list(RUNTIMES.values())
    header = ["target", *(f"{r.label} (`{r.name}`)" for r in runtimes)]
    lines = [_line(header), INDENT + "|" + "---|" * len(header)]
    lines += [_line([name, *(cell(r) for r in runtimes)]) for name, cell in ROWS]
    return "\n".join([BEGIN, *lines, INDENT + END])


def write(check: bool = False) -> int:
    return write_between(
        TARGET, BEGIN, END, render(), "the launcher's table", "runtimes", check=check
    )
