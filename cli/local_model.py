"""A local model for development: answers every worker's structured request at once with
a schema-valid answer made from the prompt's own data, so that each flow can be seen to
succeed without a Gemini key. Never deployed (`cli/`); `evidencia serve --local-model`,
the tests and the bench use it through the Gemini protocol stand-in.

- Research: one observed statement quoting the first evidence item and citing up to three
  items at the revisions shown; findings, sentiment (by keywords) or a query suggestion
  when the task asks for them.
- Psychologist: one hypothesis per deterministic signal in the prompt, citing that
  signal's events; the combining call keeps the parts' hypotheses, duplicates removed;
  an end's summary as the stand-in's default gives it (the first, the last and the first
  failing event, the failure in the error's own words).
- AgentConnect: the option whose words the session input shares most (a yes/no question:
  yes when the input names a word of the question).
- A coding agent's own requests (Gemini CLI through `evidencia launch`), which ask for no
  response schema: one short text that says it is made up and runs no tool, so that the
  agent's turn ends at once. Its side requests (router, next speaker, loop check) take the
  stand-in's defaults before this model is asked.

`python -m cli.local_model` serves it alone on a free loopback port and prints its URL
(`examples/launch.sh` points Gemini CLI at it).

Every answer reports the model version `evidencia-local`, so a stored result says where
it came from. The text is made up and reasons about nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cli.gemini_stand_in import (
    GeminiTestServer,
    Recorded,
    Reply,
    fenced_lines,
    psychologist_summary,
)
from functions.research.checks import QUANTITATIVE
from functions.research.prompts import METHOD_VERSION, TASKS

MODEL_VERSION = "evidencia-local"
MADE_UP = "Made up by the local development model (evidencia-local), not an analysis."
MAX_CITED = 3
POSITIVE = {"good", "great", "love", "easy", "fast", "helpful", "clear", "smooth", "like"}
NEGATIVE = {"slow", "confusing", "confused", "bad", "hate", "broken", "waited", "error", "stuck"}
STOPWORDS = {"the", "and", "for", "with", "that", "this", "does", "should", "from", "what"}
_WORD = re.compile(r"[a-z][a-z0-9_-]{2,}")


def start() -> GeminiTestServer:
    """The local model, served on a free loopback port; it keeps no record of requests.
    Its side answers (a research support check, a coding agent's router) name it too."""
    server = GeminiTestServer(keep_requests=False, model_version=MODEL_VERSION)
    server.respond_with(answer)
    return server.start()


def answer(request: Recorded) -> Reply:
    schema = request.generation.get("responseJsonSchema")
    if schema is None:
        return Reply(text=_agent(request), model_version=MODEL_VERSION)
    properties = schema["properties"]
    prompt = request.prompt
    if "hypotheses" in properties:
        data: Any = _psychologist(prompt)
        if "summary" in properties:
            data["summary"] = json.loads(psychologist_summary(request).text or "null")
    elif "value" in properties:
        data = _agentconnect(prompt, properties["value"])
    else:
        data = _research(prompt)
    return Reply(text=json.dumps(data), model_version=MODEL_VERSION)


def _agent(request: Recorded) -> str:
    """A coding agent's turn, answered in plain text with no function call; it quotes the
    last text the user sent (Gemini CLI sends its context first, the prompt last)."""
    turns = [c for c in request.body.get("contents") or [] if c.get("role", "user") == "user"]
    texts = [part["text"] for turn in turns for part in turn.get("parts") or [] if "text" in part]
    asked = " ".join(texts[-1].split())[:80] if texts else ""
    return f"{MADE_UP} It runs no tool. Asked: {asked}"


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - STOPWORDS


# -- research ---------------------------------------------------------------------------


def _quote(text: str) -> str:
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:160]
    statement = f'An evidence item says: "{first}"'
    return (
        "The cited evidence items speak to this." if QUANTITATIVE.search(statement) else statement
    )


def _statement(item: dict[str, Any], basis: str) -> dict[str, Any]:
    return {
        "statement": _quote(item["text"]),
        "basis": basis,
        "evidence": [{"evidence_id": item["evidence_id"], "revision": item["revision"]}],
        "uncertainty": MADE_UP,
    }


def _sentiment(item: dict[str, Any]) -> dict[str, Any]:
    words = _words(item["text"])
    good, bad = bool(words & POSITIVE), bool(words & NEGATIVE)
    label = {(True, True): "mixed", (True, False): "positive", (False, True): "negative"}
    return {
        "evidence_id": item["evidence_id"],
        "revision": item["revision"],
        "label": label.get((good, bad), "neutral"),
        "uncertainty": MADE_UP,
    }


def _request_kind(prompt: str) -> str:
    task = re.search(r"^Task: (.*)$", prompt, re.MULTILINE)
    found = task.group(1) if task else ""
    return next((kind for kind, text in TASKS.items() if text == found), "overview")


def _research(prompt: str) -> dict[str, Any]:
    items = list(fenced_lines(prompt, "evidence_items"))
    kind = _request_kind(prompt)
    cited = items[:MAX_CITED]
    main = _statement(cited[0], "observed")
    main["evidence"] = [{"evidence_id": i["evidence_id"], "revision": i["revision"]} for i in cited]
    query = " ".join(sorted(_words(cited[0]["text"]))[:4]) or "evidence"
    return {
        "answer": main,
        "findings": [_statement(i, "inferred") for i in cited]
        if kind in ("themes", "audiences")
        else [],
        "sentiment": [_sentiment(i) for i in items[:20]] if kind == "sentiment" else [],
        "query_suggestions": [
            {
                "query": query,
                "excluded_terms": [],
                "evidence": main["evidence"][:1],
                "rationale": MADE_UP,
            }
        ]
        if kind == "query_suggestions"
        else [],
        "limitations": [MADE_UP],
        "quantitative_claims": False,
        "method_version": METHOD_VERSION,
    }


# -- psychologist -----------------------------------------------------------------------

_ADVICE = {
    "task_reopened": (
        "The agent closes tasks before their acceptance criteria hold.",
        "Before closing a task, run its checks and say which criteria were verified.",
    ),
    "tool_error_repeated": (
        "The agent retries a failing tool call without changing its approach.",
        "After two identical tool errors, read the error and change the approach or ask.",
    ),
    "last_events_before_abnormal_end": (
        "The session ended abnormally right after these events.",
        "Save progress and report state before long or risky steps.",
    ),
}


def _header(prompt: str, name: str) -> Any:
    found = re.search(rf"^{name}: (.*)$", prompt, re.MULTILINE)
    return json.loads(found.group(1)) if found else None


def _hypothesis(signal: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    hypothesis, change = _ADVICE.get(signal["kind"], ("The agent shows a pattern.", "Review it."))
    ending = signal["kind"] == "last_events_before_abnormal_end"
    return {
        "agenteAlvo": signal["agent"],
        "observacao": f"{signal['agent']}: {signal['summary']}.",
        "hipotese": hypothesis,
        "sugestao": change,
        "confiancaPercent": 40,
        "evidenceEventIds": signal["eventIds"],
        "terminationAnalysis": {"analise": f"The session ended {session.get('cause')}."}
        if ending
        else None,
    }


def _psychologist(prompt: str) -> dict[str, Any]:
    combined = list(fenced_lines(prompt, "findings"))
    if combined:
        unique = {(h["agenteAlvo"], h["observacao"]): h for h in combined[0]}
        return {"hypotheses": list(unique.values())[:10]}
    session = _header(prompt, "Session") or {}
    signals = _header(prompt, "Signals") or []
    return {"hypotheses": [_hypothesis(signal, session) for signal in signals[:10]]}


# -- agentconnect -----------------------------------------------------------------------


def _agentconnect(prompt: str, value_schema: dict[str, Any]) -> dict[str, Any]:
    given: Any = next(fenced_lines(prompt, "session_input"), {})
    said = _words(json.dumps(given))
    if value_schema.get("type") == "boolean":
        question = re.search(r"^Question: (.*)$", prompt, re.MULTILINE)
        asked = _words(question.group(1) if question else "")
        return {"value": bool(asked & said), "probability": 0.9 if asked & said else 0.7}
    criteria = dict(re.findall(r"^- ([A-Za-z0-9][A-Za-z0-9_.-]*): (.*)$", prompt, re.MULTILINE))
    scores = {name: len(_words(f"{name} {text}") & said) for name, text in criteria.items()}
    options = value_schema["enum"]
    best = max(options, key=lambda name: (scores.get(name, 0), -options.index(name)))
    return {"value": best, "probability": min(0.95, 0.55 + 0.1 * scores.get(best, 0))}


def main() -> None:
    """Serve the local model alone until interrupted; its URL is the one line printed."""
    import threading

    server = start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
