"""A pydantic-ai agent traced by OpenInference, run for real with no network.

An `Agent` over pydantic-ai's `FunctionModel` (a local function stands in for the model:
it calls the one tool, `run_command`, and once told the result, answers in text) runs
several turns of one conversation, each turn continuing the last one's messages. The
tool fails every time: by `ModelRetry` (the model is told and answers; the turn ends
well) or by an exception that ends the turn (`--tool-failure raise`). pydantic-ai's own
OpenTelemetry instrumentation (`Agent.instrument_all()`, its default format, over the
global tracer provider) makes the spans; OpenInference's span processor for
pydantic-ai (`openinference-instrumentation-pydantic-ai`) adds its attributes
(`openinference.span.kind`, `session.id`, `tool.name`, ...), as Phoenix users set it up;
the OpenTelemetry SDK's OTLP/HTTP protobuf exporter sends them to `--endpoint`. The session
is named both ways a Phoenix user would: OpenInference's `using_session` around the
turns, and pydantic-ai's `conversation_id` on each run.

Run it as its own process, so that its OpenTelemetry globals are its own:

    OTLP_TOKEN=... python -m tests.agents.openinference_agent \\
        --endpoint http://HOST/projects/P/otlp/v1/traces --session-id S --agent-name A

The resource is the SDK's default, so `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`
apply as a user would set them. It exits 0 once the exporter has flushed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from typing import Any

TOOL_FAILURES = ("retry", "raise")
SESSION_WAYS = ("both", "using_session", "conversation_id")


class CommandFailedError(RuntimeError):
    """What `run_command` raises with `--tool-failure raise`: the command exited non-zero."""


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.openinference_agent")
    parser.add_argument("--endpoint", required=True, help="the OTLP/HTTP traces URL")
    parser.add_argument(
        "--token-env",
        default="OTLP_TOKEN",
        help="the environment variable holding the bearer token (never on the command line)",
    )
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--agent-name", required=True)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--tool-failure", choices=TOOL_FAILURES, default="retry")
    parser.add_argument(
        "--session-via",
        choices=SESSION_WAYS,
        default="both",
        help="how the session is named: OpenInference's using_session, pydantic-ai's "
        "conversation_id, or both",
    )
    return parser.parse_args(argv)


def _model(agent_name: str) -> Any:
    """The stand-in model: call `run_command` unless the last request answers a tool call,
    then say what happened."""
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def reply(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        told = isinstance(last, ModelRequest) and any(
            isinstance(part, RetryPromptPart | ToolReturnPart) for part in last.parts
        )
        if told:
            return ModelResponse(parts=[TextPart("The build failed; `make build` has no target.")])
        return ModelResponse(parts=[ToolCallPart("run_command", {"command": "make build"})])

    return FunctionModel(reply, model_name=f"{agent_name}-stand-in")


async def _turns(arguments: argparse.Namespace) -> None:
    from openinference.instrumentation import using_session
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelMessage

    agent = Agent(
        _model(arguments.agent_name),
        name=arguments.agent_name,
        instructions="When asked to build, call run_command with the build command.",
    )

    @agent.tool_plain
    def run_command(command: str) -> str:
        """Runs a shell command in the project and returns its output."""
        message = f"`{command}` exited with status 2: No rule to make target 'build'"
        if arguments.tool_failure == "raise":
            raise CommandFailedError(message)
        raise ModelRetry(message)

    history: list[ModelMessage] = []
    session = (
        using_session(arguments.session_id)
        if arguments.session_via != "conversation_id"
        else contextlib.nullcontext()
    )
    conversation_id = arguments.session_id if arguments.session_via != "using_session" else None
    with session:
        for turn in range(1, arguments.turns + 1):
            try:
                result = await agent.run(
                    f"Build it (try {turn}).",
                    message_history=history,
                    conversation_id=conversation_id,
                )
            except CommandFailedError as failed:
                print(f"turn {turn} failed: {failed!r}", file=sys.stderr)
                continue
            history = result.all_messages()
            print(f"turn {turn}: {result.output!r}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(argv)
    from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from pydantic_ai import Agent

    token = os.environ.get(arguments.token_env, "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    exporter = OTLPSpanExporter(endpoint=arguments.endpoint, headers=headers, timeout=10)
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(OpenInferenceSpanProcessor())
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
    Agent.instrument_all()
    asyncio.run(_turns(arguments))
    flushed = tracer_provider.force_flush(10_000)
    tracer_provider.shutdown()
    return 0 if flushed else 1


if __name__ == "__main__":
    sys.exit(main())
