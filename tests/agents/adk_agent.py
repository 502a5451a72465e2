"""Google's Agent Development Kit run for real, traced by its own OpenTelemetry.

An `LlmAgent` with one Python tool, `run_command`, that fails every time it is called,
run for several turns of one ADK session (`Runner` over an `InMemorySessionService`).
The model is ADK's `Gemini`, pointed at the Gemini test server by its `base_url`; the
server's script decides when the model calls the tool. ADK's own telemetry is set up the
way ADK sets it up (`google.adk.telemetry.setup.maybe_set_otel_providers`) with one span
processor: the OpenTelemetry SDK's OTLP/HTTP protobuf exporter, pointed at `--endpoint`.

Run it as its own process, so that its OpenTelemetry globals are its own:

    OTLP_TOKEN=... GOOGLE_API_KEY=test-key python -m tests.agents.adk_agent \\
        --endpoint http://HOST/projects/P/otlp/v1/traces --gemini-url http://127.0.0.1:PORT \\
        --session-id S --agent-name A

google-adk 2.13 cannot share the project's environment (it requires google-genai<3,
opentelemetry-sdk<=1.44 and websockets<16), so this module runs under an interpreter of
its own, `tests/agents/adk/.venv` (made by `tests/agents/google_adk.py` from
`tests/agents/adk/requirements.lock`), and imports nothing of the project.
`OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` are read by ADK's resource detection as
a user would set them. It exits 0 once the exporter has flushed,
whether or not the turns failed (a raised tool failure ends its turn with that error).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

TOOL_FAILURES = ("raise", "return")


class CommandFailedError(RuntimeError):
    """What `run_command` raises: the command exited non-zero."""


def _run_command_tool(failure: str) -> Any:
    def run_command(command: str) -> dict[str, Any]:
        """Runs a shell command in the project and returns its output."""
        message = f"`{command}` exited with status 2: No rule to make target 'build'"
        if failure == "raise":
            raise CommandFailedError(message)
        return {"status": "error", "error_message": message}

    return run_command


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.adk_agent")
    parser.add_argument(
        "--endpoint",
        help="the OTLP/HTTP traces URL; without it, ADK's own exporters from the standard "
        "OTEL_EXPORTER_OTLP_* variables (traces, metrics and logs, headers included)",
    )
    parser.add_argument(
        "--token-env",
        default="OTLP_TOKEN",
        help="the environment variable holding the bearer token (never on the command line)",
    )
    parser.add_argument("--gemini-url", required=True, help="the Gemini test server's URL")
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--agent-name", required=True, help="a Python identifier")
    parser.add_argument("--app-name", default="evidencia_tests")
    parser.add_argument("--user-id", default="tester")
    parser.add_argument("--model", default="gemini-2.5-flash-lite")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--tool-failure", choices=TOOL_FAILURES, default="raise")
    return parser.parse_args(argv)


async def _turns(arguments: argparse.Namespace) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.models import Gemini
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    agent = LlmAgent(
        name=arguments.agent_name,
        description="Builds the project when asked.",
        instruction="When asked to build, call run_command with the build command.",
        model=Gemini(model=arguments.model, base_url=arguments.gemini_url),
        tools=[_run_command_tool(arguments.tool_failure)],
    )
    sessions = InMemorySessionService()
    runner = Runner(app_name=arguments.app_name, agent=agent, session_service=sessions)
    await sessions.create_session(
        app_name=arguments.app_name, user_id=arguments.user_id, session_id=arguments.session_id
    )
    for turn in range(1, arguments.turns + 1):
        prompt = types.Content(role="user", parts=[types.Part(text=f"Build it (try {turn}).")])
        try:
            async for event in runner.run_async(
                user_id=arguments.user_id, session_id=arguments.session_id, new_message=prompt
            ):
                print(f"turn {turn}: {event.author}: {_summary(event)}", file=sys.stderr)
        except CommandFailedError as failed:
            print(f"turn {turn} failed: {failed!r}", file=sys.stderr)
    await runner.close()


def _summary(event: Any) -> str:
    parts = event.content.parts if event.content and event.content.parts else []
    said = []
    for part in parts:
        if part.function_call:
            said.append(f"call {part.function_call.name} ({part.function_call.id})")
        elif part.function_response:
            said.append(f"response {part.function_response.name}")
        elif part.text:
            said.append(repr(part.text[:60]))
    return ", ".join(said) or "(no content)"


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(argv)
    from google.adk.telemetry.setup import OTelHooks, maybe_set_otel_providers
    from opentelemetry import _logs, metrics, trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    hooks = []
    if arguments.endpoint:
        token = os.environ.get(arguments.token_env, "")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        exporter = OTLPSpanExporter(endpoint=arguments.endpoint, headers=headers, timeout=10)
        hooks.append(OTelHooks(span_processors=[BatchSpanProcessor(exporter)]))
    maybe_set_otel_providers(hooks)
    asyncio.run(_turns(arguments))
    flushed = True
    for provider in (
        trace.get_tracer_provider(),
        metrics.get_meter_provider(),
        _logs.get_logger_provider(),
    ):
        if hasattr(provider, "force_flush"):
            flushed = provider.force_flush(10_000) is not False and flushed
        if hasattr(provider, "shutdown"):
            provider.shutdown()
    return 0 if flushed else 1


if __name__ == "__main__":
    sys.exit(main())
