#!/usr/bin/env bash
# The Psychologist: an agent's session log goes in, the session ends abnormally, the
# analysis proposes hypotheses that cite the log's events, a person audits those events
# and decides. Run against `make run LOCAL_MODEL=1`.
. "$(dirname "$0")/lib.sh"

step "1. a project; ana ingests (member), vic reads (viewer), olga decides (admin)"
P=$(admin tenant create --kind project --name "Psychologist demo" --json | field id)
admin member add --tenant "$P" --user ana --role member >/dev/null
admin member add --tenant "$P" --user vic --role viewer >/dev/null
admin member add --tenant "$P" --user olga --role admin >/dev/null
ANA=$(token ana agent:psychologist "$P")
VIC=$(token vic agent:psychologist "$P")
OLGA=$(token olga agent:psychologist "$P")
S=$(new_ulid)
echo "project $P, session $S"

step "2. events, at most 500 a request; re-sending an id is a no-op counted in \"duplicates\""
EVENTS=$("$PYTHON" - "$S" <<'PY'
import json
from datetime import datetime, timedelta, timezone
from ulid import ULID
start = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
kinds = ["task.opened"] + ["task.reopened"] * 3 + ["tool.error"] * 3
events = []
for i, kind in enumerate(kinds):
    at = start + timedelta(minutes=i)
    event = {"id": str(ULID.from_datetime(at)), "agent": "dev-api", "type": kind,
             "at": at.isoformat().replace("+00:00", "Z"), "taskId": "T-1"}
    if kind == "tool.error":
        event["data"] = {"tool": "pytest", "error": "exit 1"}
    events.append(event)
print(json.dumps({"events": events}))
PY
)
echo "stored: $(api POST "/projects/$P/sessions/$S/events" "$ANA" "$EVENTS" | labelled)"

step "3. the session ends abnormally: that queues its analysis by itself"
ANALYSIS=$(api POST "/projects/$P/sessions/$S/end" "$ANA" \
  '{"state":"closed_abnormally","cause":"crash"}' | field analysisId)
echo "analysis $ANALYSIS"

step "4. the analysis: poll until it settles (status, counts, token use, signals)"
DONE=$(wait_until "$ANALYSIS_WAIT_S" "$ANALYSIS_WAITS_ON" 'r["status"] in ("completed", "failed")' GET "/projects/$P/analyses/$ANALYSIS" "$VIC")
echo "counts: $(echo "$DONE" | field counts | labelled)"
[ "$(echo "$DONE" | field status)" = completed ] || { echo "the analysis failed" >&2; exit 1; }

step "5. the hypotheses (the contract): a bare array, newest first"
HYPOTHESES=$(api GET "/projects/$P/hypotheses?sessionId=$S&status=proposed" "$VIC")
echo "$HYPOTHESES" | "$PYTHON" -c 'import json, sys
for h in json.load(sys.stdin):
    print("-", h["agenteAlvo"] + ":", h["hipotese"], "(%s%%)," % h["confiancaPercent"], "cites", len(h["evidenceEventIds"]), "events")'
RETRIES=$(echo "$HYPOTHESES" | "$PYTHON" -c 'import json, sys
found = [h for h in json.load(sys.stdin) if "retries a failing tool call" in h["hipotese"]]
print(json.dumps(found[0]) if found else sys.exit("no hypothesis on the repeated tool errors"))')
H=$(echo "$RETRIES" | field id)
CITED=$(echo "$RETRIES" | "$PYTHON" -c 'import json, sys; print(",".join(json.load(sys.stdin)["evidenceEventIds"]))')

step "6. audit: the events the hypothesis on repeated tool errors cites, read back by id"
api GET "/projects/$P/sessions/$S/events?ids=$CITED" "$VIC" | "$PYTHON" -c 'import json, sys
audit = json.load(sys.stdin)
for e in audit["events"]:
    print("  ", e["at"], e["agent"], e["type"])
if audit["missing"]:
    sys.exit("cited events missing: %s" % audit["missing"])'

step "7. decide (admin): the hypothesis leaves the \"proposed\" filter"
api POST "/projects/$P/hypotheses/$H/decision" "$OLGA" \
  '{"status":"accepted","reason":"The cited events bear it out: pytest failed three times and was run again unchanged."}' \
  | "$PYTHON" -c 'import json, sys; d = json.load(sys.stdin)["decidedBy"]; print("decided by", d["userId"], "(%s)" % d["credentialClass"])'
LEFT=$(api GET "/projects/$P/hypotheses?sessionId=$S&status=proposed" "$VIC" | field "")
echo "$LEFT" | H="$H" "$PYTHON" -c 'import json, os, sys
ids = [h["id"] for h in json.load(sys.stdin)]
sys.exit("the decided hypothesis is still proposed" if os.environ["H"] in ids else 0)'
echo "accepted $H"

step "8. the same in the review console, signed in as olga"
echo "open $URL/#/hypotheses?project=$P&sessionId=$S"
echo "sign in with a token from:"
echo "  $EVIDENCIA admin --port $PORT token create --user olga --class user_session --capability agent:psychologist --tenant $P --expires-in 1h"
