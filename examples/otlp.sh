#!/usr/bin/env bash
# OpenTelemetry into the Psychologist: an agent run traced with the OpenTelemetry SDK and
# exported by its own OTLP/HTTP exporter becomes one session's events; its agent span ends
# in error, so the session ends abnormally and its analysis cites the spans' events. Run
# against `make run LOCAL_MODEL=1`.
. "$(dirname "$0")/lib.sh"

step "1. a project; ana's token is the exporter's bearer header, vic reads (viewer)"
P=$(admin tenant create --kind project --name "OTLP demo" --json | field id)
admin member add --tenant "$P" --user ana --role member >/dev/null
admin member add --tenant "$P" --user vic --role viewer >/dev/null
ANA=$(token ana agent:psychologist "$P")
VIC=$(token vic agent:psychologist "$P")
S="trip-$(new_uuid | cut -c1-8)"
echo "project $P, conversation $S"

step "2. an agent run traced with the SDK, sent by OTLPSpanExporter (protobuf, gzip)"
ENDPOINT="$URL/projects/$P/otlp/v1/traces" TOKEN="$ANA" CONVERSATION="$S" "$PYTHON" - <<'PY'
import os
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

exporter = OTLPSpanExporter(
    endpoint=os.environ["ENDPOINT"],
    headers={"Authorization": "Bearer " + os.environ["TOKEN"]},
    compression=Compression.Gzip,
)
provider = TracerProvider(resource=Resource.create({"service.name": "travel-service"}))
provider.add_span_processor(BatchSpanProcessor(exporter))
tracer = provider.get_tracer("trip-planner")
who = {"gen_ai.conversation.id": os.environ["CONVERSATION"], "gen_ai.agent.name": "trip-planner"}
with tracer.start_as_current_span("invoke_agent trip-planner",
        attributes={**who, "gen_ai.operation.name": "invoke_agent"}) as agent:
    with tracer.start_as_current_span("chat gemini-3.8-flash",
            attributes={**who, "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "gemini-3.8-flash"}):
        pass
    for _ in range(3):
        with tracer.start_as_current_span("execute_tool search_flights",
                attributes={**who, "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "search_flights"}) as tool:
            tool.set_status(Status(StatusCode.ERROR, "upstream timeout"))
    agent.set_status(Status(StatusCode.ERROR, "gave up after the tool failed"))
provider.shutdown()
print("exported 5 spans")
PY

step "3. the turn ended in error; the run is over, so ana ends the session (else silence would, as its turns say): it ended abnormally and was analysed"
api POST "/projects/$P/sessions/$S/end" "$ANA" '{"state": "closed_abnormally", "cause": "last_turn_failed"}' | "$PYTHON" -c 'import json, sys
s = json.load(sys.stdin); print("session", s["sessionId"], s["state"], s["cause"], "after", s["eventCount"], "events")'
HYPOTHESES=$(wait_until "$ANALYSIS_WAIT_S" "$ANALYSIS_WAITS_ON" 'len(r) > 0' GET "/projects/$P/hypotheses?sessionId=$S" "$VIC")
echo "$HYPOTHESES" | "$PYTHON" -c 'import json, sys
for h in json.load(sys.stdin):
    print("-", h["agenteAlvo"] + ":", h["hipotese"], "cites", len(h["evidenceEventIds"]), "events")'
CITED=$(echo "$HYPOTHESES" | "$PYTHON" -c 'import json, sys; print(",".join(json.load(sys.stdin)[0]["evidenceEventIds"]))')

step "4. audit: each cited event names the span it came from"
api GET "/projects/$P/sessions/$S/events?ids=$CITED" "$VIC" | "$PYTHON" -c 'import json, sys
audit = json.load(sys.stdin)
for e in audit["events"]:
    span = e["data"]["span"]
    print("  ", e["at"], e["type"], span["name"], "span", span["spanId"], "of trace", span["traceId"])
if audit["missing"]:
    sys.exit("cited events missing: %s" % audit["missing"])'
