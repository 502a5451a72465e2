#!/usr/bin/env bash
# evidencia launch: a real coding agent (Gemini CLI, npm-locked in tests/agents/gemini-cli)
# started the way AgentConnect chose, its own telemetry logged to the Psychologist under the
# linked agent name, its session ended by its exit and joined to the choice. Run against
# `make run LOCAL_MODEL=1`. Gemini CLI asks a local development model too: the host does not
# publish its own model's address, so this starts one more of the same (`python -m
# cli.local_model`) on a loopback port; GEMINI_URL names another. Needs Node.js 20+ and npm
# the first time (to install the locked Gemini CLI).
. "$(dirname "$0")/lib.sh"

SCRATCH=$(mktemp -d)
MODEL_PID=
trap 'if [ -n "$MODEL_PID" ]; then kill "$MODEL_PID" 2>/dev/null || true; fi; rm -rf "$SCRATCH" "$BODY" "$REPLY_FILE"' EXIT

GEMINI=${EVIDENCIA_GEMINI:-$ROOT/tests/agents/gemini-cli/node_modules/.bin/gemini}
if [ ! -x "$GEMINI" ]; then
  echo "installing the locked Gemini CLI (npm ci in tests/agents/gemini-cli)"
  npm ci --prefix "$ROOT/tests/agents/gemini-cli" --ignore-scripts --no-audit --no-fund --silent
fi
MODEL_URL=${GEMINI_URL:-}
if [ -z "$MODEL_URL" ]; then
  : >"$SCRATCH/model" # there before the model writes its address, which is read below
  "$PYTHON" -m cli.local_model >"$SCRATCH/model" 2>&1 &
  MODEL_PID=$!
  MODEL_URL=$(first_line "$SCRATCH/model")
fi

step "1. an org and its project; olga configures both (admin), lee launches (one token, both capabilities)"
org_and_project "Launcher demo" olga lee
OLGA=$(loop_token olga)
LEE=$(loop_token lee)
A=$(new_uuid)
echo "org $O, project $P, agent $A"

step "2. the selection (Gemini CLI; plan mode for a question alone) and the link to the project"
api PUT "/v1/orgs/$O/agents/$A/model-selection" "$OLGA" '{
  "decision": {"decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
    "question": {"type": "boolean", "instructions": "Is this only a question about the code, with nothing to edit?"},
    "rules": [{"permissionMode": "plan", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}]},
  "steps": [],
  "default": {"runtime": "gemini-cli", "model": "gemini-3.1-pro-preview", "effort": "medium",
    "permissionMode": "acceptEdits", "fastMode": false}}' \
  | "$PYTHON" -c 'import json, sys; print("selection version", json.load(sys.stdin)["version"])'
api PUT "/v1/orgs/$O/agents/$A/outcome-source" "$OLGA" "{\"projectId\": \"$P\", \"agent\": \"dev-api\"}" \
  | "$PYTHON" -c 'import json, sys; s = json.load(sys.stdin); print("outcome source: project", s["projectId"], "agent", s["agent"])'

step "3. lee launches: the launcher waits for the choice, runs Gemini CLI with it, and ends the session by its exit"
mkdir -p "$SCRATCH/home/.gemini" "$SCRATCH/work"
# Gemini CLI's own settings for this demo (a HOME of its own): the API-key auth the local
# model stands behind, no folder-trust prompt, no usage statistics, no update check.
cat >"$SCRATCH/home/.gemini/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}}
JSON
(
  cd "$SCRATCH/work"
  EVIDENCIA_URL=$URL EVIDENCIA_TOKEN=$LEE EVIDENCIA_GEMINI=$GEMINI HOME=$SCRATCH/home \
    GEMINI_API_KEY=local GOOGLE_GEMINI_BASE_URL=$MODEL_URL NO_COLOR=1 \
    "$EVIDENCIA" launch --org "$O" --agent "$A" --title "Fix the login bug" \
    --input '{"issue": "the login form forgets the session"}' \
    -- -p "Fix the login bug." --output-format json 2>"$SCRATCH/said" >"$SCRATCH/answer"
) || { cat "$SCRATCH/said" >&2; exit 1; }
grep '^evidencia launch' "$SCRATCH/said"
"$PYTHON" -c 'import json, sys; print("the agent said:", json.load(open(sys.argv[1]))["response"])' "$SCRATCH/answer"

step "4. the session in the Psychologist: ended by the launcher, fed by Gemini CLI's own telemetry"
api GET "/projects/$P/sessions?agent=dev-api" "$OLGA" | "$PYTHON" -c 'import json, sys
[s] = json.load(sys.stdin)
print("session", s["sessionId"], s["state"], "source", s["source"], "events", s["eventCount"])
print("tokens in", s["usage"]["inputTokens"], "out", s["usage"]["outputTokens"])
if (s["state"], s["source"]) != ("closed", "gemini-cli"):
    sys.exit("the launched session did not end closed with its telemetry")'

step "5. the selection report joins the session to its choice"
api GET "/v1/orgs/$O/agents/$A/selection-report" "$OLGA" | "$PYTHON" -c 'import json, sys
r = json.load(sys.stdin)
print("sessions started", r["sessions"]["started"], "joined", r["sessions"]["joined"])
for t in r["targets"]:
    print("  target", t["targetKey"], "sessions", t["sessions"], "abnormal", t["abnormalEnds"]["count"])
if r["sessions"]["joined"] != 1:
    sys.exit("the launched session was not joined")'
