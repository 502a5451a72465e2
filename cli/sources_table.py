"""`evidencia sources`: the table of telemetry sources in `docs/otlp.md`, rendered from the
rows in `functions/psychologist/telemetry/sources.py`, so that the page says what the code
reads. `--check` fails when the page's table is not the rows'."""

from __future__ import annotations

from cli.page_table import ROOT, write_between
from functions.psychologist.telemetry.sources import GENAI_SPANS, ROWS, Kind, Match, Source

TARGET = ROOT / "docs" / "otlp.md"
BEGIN = "<!-- the table of sources: `evidencia sources` writes it from the rows -->"
END = "<!-- end of the table of sources -->"
HEADER = (
    "| source | recognised by | signals | session | tool calls | model requests (tokens, cost) "
    "| turns | where a tool failure is said |\n|---|---|---|---|---|---|---|---|"
)


def _code(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _match(match: Match, family: str, prefix: str) -> str:
    name = f"{family} `{prefix}{match.name}`" if match.name else f"any {family}"
    conditions = [f"`{key}` = `{value}`" for key, value in match.where]
    conditions += [f"with `{key}`" for key in match.present]
    return f"{name} where {' and '.join(conditions)}" if conditions else name


def _matches(source: Source, kind: Kind) -> list[str]:
    spans = source.spans or GENAI_SPANS
    found = [_match(m, "span", "") for m in spans if m.kind == kind]
    return found + [_match(m, "log", source.event_prefix) for m in source.logs if m.kind == kind]


def _recognised(source: Source) -> str:
    ways = [f"`service.name` {_code(source.service_names)}"] if source.service_names else []
    ways += [f"scope {_code([p + '*' for p in source.scope_prefixes])}"] * bool(
        source.scope_prefixes
    )
    ways += [f"span attribute `{source.span_marker}`"] * bool(source.span_marker)
    return "; ".join(ways) or "anything else"


def _tools(source: Source) -> str:
    found = _matches(source, Kind.TOOL)
    return f"{'; '.join(found)}; merged by {_code(source.call_ids)}"


def _models(source: Source) -> str:
    found = _matches(source, Kind.MODEL)
    usage = source.usage
    names = [*usage.input, *usage.input_parts, *usage.output, *usage.cached, *usage.cost]
    tokens = _code(list(dict.fromkeys(names)))
    merged = f"merged by {_code(source.request_ids)}"
    return f"{'; '.join(found) or 'none'} ({tokens}); {merged}"


def _turns(source: Source) -> str:
    if source.turns is None:
        return "none"
    closers = _code(source.turns.closers) if source.turns.closers else "the root span"
    return f"closed by {closers}: {source.turns.words}" if source.turns.words else closers


def _row(source: Source) -> str:
    session = " else ".join(f"`{name}`" for name in source.session_attributes)
    if source.docs.session:
        session += f" ({source.docs.session})"
    failure = source.failure.words
    if source.docs.notes:
        failure += f". Also: {source.docs.notes}"
    cells = [
        source.docs.label,
        _recognised(source),
        ", ".join(sorted(signal.value for signal in source.signals)),
        session,
        _tools(source),
        _models(source),
        _turns(source),
        failure,
    ]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render() -> str:
    return "\n".join([BEGIN, HEADER, *(_row(source) for source in ROWS), END])


def write(check: bool = False) -> int:
    return write_between(
        TARGET, BEGIN, END, render(), "the table of sources", "sources", check=check
    )
