#!/usr/bin/env bash
# Research with citations: a conversation, evidence, a question, and an answer whose every
# statement cites an evidence item at a revision. Run against `make run LOCAL_MODEL=1`.
. "$(dirname "$0")/lib.sh"

step "1. a workspace, a member and her token (capability agent:research)"
WS=$(admin tenant create --kind workspace --name "Research demo" --json | field id)
admin member add --tenant "$WS" --user ana --role member >/dev/null
TOKEN=$(token ana agent:research "$WS")
echo "workspace $WS"

step "2. a conversation"
CONV=$(api POST /research-api/conversations/create "$TOKEN" \
  "{\"workspace_id\":\"$WS\",\"title\":\"Onboarding\"}" | field id)
echo "conversation $CONV"

step "3. evidence items (a changed text bumps the item's and the conversation's revision)"
ITEMS=$(api POST /research-api/evidence/upsert "$TOKEN" "{\"workspace_id\":\"$WS\",\"conversation_id\":\"$CONV\",
  \"items\":[{\"text\":\"Onboarding took me two days; the wizard kept asking the same things.\",
              \"source\":{\"title\":\"Interview 1\"}},
             {\"text\":\"The setup wizard is confusing.\"}]}")
echo "$ITEMS" | "$PYTHON" -c 'import json, sys
stored = json.load(sys.stdin)
for item in stored["items"]:
    print("item", item["evidence_id"], "revision", item["revision"])
print("conversation revision", stored["conversation_revision"])'

step "4. ask: 202 with a queued run; the run worker starts from the run's create event"
RUN=$(api POST /research-api/assistant/ask "$TOKEN" \
  "{\"workspace_id\":\"$WS\",\"conversation_id\":\"$CONV\",\"request_kind\":\"question\",\"question\":\"Why is onboarding slow?\"}" \
  "Idempotency-Key: first-question" | field run.id)
echo "run $RUN"

step "5. status (the contract): poll until the run settles; a read never writes"
STATUS_BODY="{\"workspace_id\":\"$WS\",\"conversation_id\":\"$CONV\",\"run_id\":\"$RUN\"}"
RESULT=$(wait_until "$WORKER_WAIT_S" "the run (its worker starts on the run's create event)" \
  'r["run"]["status"] not in ("queued", "processing")' POST /research-api/assistant/status "$TOKEN" "$STATUS_BODY")
echo "run: $(echo "$RESULT" | field run | labelled status failure_code generation processor model_id)"
[ "$(echo "$RESULT" | field run.status)" = completed ] || { echo "the run did not complete" >&2; exit 1; }
echo "model: $(echo "$RESULT" | field run.model_version)"
echo "statement: $(echo "$RESULT" | field message.answer.answer.statement)"

step "6. every citation resolves to an evidence item of the conversation at its revision"
echo "$RESULT" | ITEMS="$ITEMS" "$PYTHON" -c 'import json, os, sys
held = {(i["evidence_id"], i["revision"]) for i in json.loads(os.environ["ITEMS"])["items"]}
for ref in json.load(sys.stdin)["message"]["answer"]["answer"]["evidence"]:
    cited = (ref["evidence_id"], ref["revision"])
    print("cites", *cited, "held" if cited in held else "NOT HELD")
    if cited not in held:
        sys.exit(1)'
echo "availability: $(echo "$RESULT" | field availability | labelled)"
CHECK=$(api GET "/research-api/runs/$RUN/citations?workspace_id=$WS" "$TOKEN" | field support_check.model_version)
echo "support check: $CHECK"

step "7. the same in the review console, signed in as ana"
echo "open $URL/#/research?workspace=$WS&conversation=$CONV&run=$RUN"
echo "sign in with a token from:"
echo "  $EVIDENCIA admin --port $PORT token create --user ana --class user_session --capability agent:research --tenant $WS --expires-in 1h"
