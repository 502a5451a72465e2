#!/usr/bin/env bash
# AgentConnect: an agent's model selection, a session that starts under it, and the frozen
# evaluation that says which runtime, model, effort and permission mode it got and why.
# Run against `make run LOCAL_MODEL=1`.
. "$(dirname "$0")/lib.sh"

step "1. an org; olga configures (admin), ana starts sessions (member)"
O=$(admin tenant create --kind org --name "AgentConnect demo" --json | field id)
admin member add --tenant "$O" --user olga --role admin >/dev/null
admin member add --tenant "$O" --user ana --role member >/dev/null
OLGA=$(token olga agent:connect "$O")
ANA=$(token ana agent:connect "$O")
A=$(new_uuid)
echo "org $O, agent $A"

step "2. the selection: a first decision, further steps, a default target (a new version each PUT)"
api PUT "/v1/orgs/$O/agents/$A/model-selection" "$OLGA" '{
  "decision": {"decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
    "question": {"type": "boolean", "instructions": "Does the task need deep reasoning about a bug?"},
    "rules": [{"model": "gemini-2.5-pro", "effort": "high", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}]},
  "steps": [{"id": "size", "decisionId": "3f2b8a4e-1c9d-4e7f-8a6b-2d5c9e0f1a3b",
    "question": {"type": "choice", "instructions": "How large is the change?",
      "criteria": {"small": "one file", "large": "many files across the repository"}},
    "rules": [{"runtime": "container", "effort": "medium", "when": {"type": "choice", "thresholds": {"large": 0.6}}}]}],
  "default": {"runtime": "local", "model": "gemini-2.5-flash", "effort": "low", "permissionMode": "default", "fastMode": true}}' \
  | "$PYTHON" -c 'import json, sys; print("selection version", json.load(sys.stdin)["version"])'

step "3. a session: 202 with the agent's next seq and a token for this session alone"
STARTED=$(api POST "/v1/orgs/$O/agents/$A/sessions" "$ANA" \
  '{"title": "Fix the login bug", "input": {"repo": "web", "issue": "the login bug loses the session"}}')
SEQ=$(echo "$STARTED" | field seq)
SESSION_TOKEN=$(echo "$STARTED" | field sessionToken)
echo "seq $SEQ"

step "4. the frozen evaluation (the contract), read with the session's own token; 409 until frozen"
EVALUATION=$(wait_until "$WORKER_WAIT_S" "the evaluation (its worker starts on the session's create event)" 'True' GET "/v1/orgs/$O/agents/$A/model-evaluations/$SEQ" "$SESSION_TOKEN")
echo "$EVALUATION" | "$PYTHON" -c 'import json, sys
e = json.load(sys.stdin)
print("outcome", e["outcome"] + ":", e["reason"])
print("target:", ", ".join("%s %s" % (k, json.dumps(v) if isinstance(v, bool) else v) for k, v in e["target"].items()))
print("model asked", e["requestedModel"] + ", answered by", e["actualModel"])
for step in e["steps"]:
    print("  step", step["stepId"] + ":", step["question"]["instructions"])
if e["outcome"] == "fallback":
    sys.exit("the evaluation fell back to the default target")'

step "5. every evaluation of the agent, newest first"
api GET "/v1/orgs/$O/agents/$A/model-evaluations?limit=20" "$ANA" | "$PYTHON" -c 'import json, sys
for e in json.load(sys.stdin)["evaluations"]:
    print("  seq", e["seq"], e["outcome"], e["target"]["model"])'

step "6. the same in the review console, signed in as ana"
echo "open $URL/#/evaluations?org=$O&agent=$A"
echo "sign in with a token from:"
echo "  $EVIDENCIA admin --port $PORT token create --user ana --class user_session --capability agent:connect --tenant $O --expires-in 1h"
