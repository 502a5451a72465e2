#!/usr/bin/env bash
# Sessions started by hand: `evidencia hooks install claude-code` puts Claude Code's own
# session-start hook and telemetry settings into the user's settings, and a `claude -p`
# typed as a person types it (no wrapper, no flag of ours) registers under its own session
# id, is given the agent's standing instructions, and feeds its telemetry to the linked
# project. Run against `make run LOCAL_MODEL=1`. Claude Code asks a model stand-in this
# starts on a loopback port (it answers "Done." and records what it was sent). Needs
# Node.js 20+ and npm the first time (to install the locked Claude Code).
. "$(dirname "$0")/lib.sh"

SCRATCH=$(mktemp -d)
MODEL_PID=
trap 'if [ -n "$MODEL_PID" ]; then kill "$MODEL_PID" 2>/dev/null || true; fi; rm -rf "$SCRATCH" "$BODY" "$REPLY_FILE"' EXIT

CLAUDE=$("$PYTHON" -c 'from tests.agents import claude; print(claude.ensure_installed())')
: >"$SCRATCH/model" # there before the model writes its address, which is read below
"$PYTHON" -c 'import json, sys, time
from cli.anthropic_stand_in import AnthropicTestServer
server = AnthropicTestServer().start()
print(server.url, flush=True)
while True:
    time.sleep(0.2)
    server.answer_text("Done.")
    sent = [json.dumps(r.body) for r in server.requests if r.main]
    open(sys.argv[1], "w").write(json.dumps(sent))' "$SCRATCH/sent.json" >"$SCRATCH/model" 2>/dev/null &
MODEL_PID=$!
MODEL_URL=$(first_line "$SCRATCH/model")

step "1. an org and its project; olga configures the agent (admin), dev runs claude by hand (member)"
org_and_project "Hooks demo" olga dev
OLGA=$(loop_token olga)
DEV=$(loop_token dev)
A=$(new_uuid)
api PUT "/v1/orgs/$O/agents/$A/model-selection" "$OLGA" '{
  "decision": {"decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
    "question": {"type": "boolean", "instructions": "Does the task need deep reasoning?"},
    "rules": [{"effort": "high", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}]},
  "steps": [],
  "default": {"runtime": "claude-code", "model": "claude-sonnet-4-6", "effort": "medium",
    "permissionMode": "acceptEdits", "fastMode": false}}' >/dev/null
api PUT "/v1/orgs/$O/agents/$A/outcome-source" "$OLGA" "{\"projectId\": \"$P\", \"agent\": \"dev-api\"}" >/dev/null
RULES="Run the tests you touched before you say a task is done."
api PUT "/v1/orgs/$O/agents/$A/instructions" "$OLGA" "{\"text\": \"$RULES\"}" | labelled version text
echo "org $O, project $P, agent $A"

step "2. dev installs the hooks once, into their own Claude Code settings"
export HOME=$SCRATCH/home XDG_CONFIG_HOME=$SCRATCH/home/.config
mkdir -p "$HOME/.claude" "$SCRATCH/repo"
echo '{"theme": "dark"}' >"$HOME/.claude/settings.json"
cp "$HOME/.claude/settings.json" "$SCRATCH/before.json"
EVIDENCIA_URL=$URL EVIDENCIA_TOKEN=$DEV "$EVIDENCIA" hooks install claude-code --org "$O" --agent "$A"
"$EVIDENCIA" hooks status

step "3. dev types claude in a repository, as every day"
(
  cd "$SCRATCH/repo"
  ANTHROPIC_BASE_URL=$MODEL_URL ANTHROPIC_API_KEY=sk-ant-local DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1 \
    "$CLAUDE" -p "Fix the login bug." --output-format json >"$SCRATCH/answer"
)
S=$(field session_id <"$SCRATCH/answer")
echo "Claude Code's own session id: $S; it answered: $(field result <"$SCRATCH/answer")"
sleep 0.5 # the stand-in writes what it was sent every 0.2 s
"$PYTHON" -c 'import json, sys
sent = json.load(open(sys.argv[1]))
given = [body for body in sent if sys.argv[2] in body]
print("model requests carrying the standing instructions:", len(given), "of", len(sent))
if not given:
    sys.exit("the hook gave the session no instructions")' "$SCRATCH/sent.json" "$RULES"

step "4. the session in AgentConnect: registered by the hook, frozen at once (no target applied)"
api GET "/v1/orgs/$O/agents/$A/model-evaluations" "$OLGA" | "$PYTHON" -c 'import json, sys
[e] = json.load(sys.stdin)["evaluations"]
print("session", e["sessionId"], "frozen at seq", e["seq"], e["outcome"] + ":", e["reason"])
if e["sessionId"] != sys.argv[1]:
    sys.exit("the hook did not register the session under its own id")' "$S"

step "5. and in the Psychologist: fed by Claude Code's own telemetry under the same id"
api GET "/projects/$P/sessions?agent=dev-api" "$OLGA" | "$PYTHON" -c 'import json, sys
[s] = json.load(sys.stdin)
print("session", s["sessionId"], "source", s["source"], "events", s["eventCount"])
if s["sessionId"] != sys.argv[1]:
    sys.exit("the telemetry did not join the session")' "$S"

step "6. dev uninstalls: the settings file is back byte for byte"
"$EVIDENCIA" hooks uninstall
cmp "$HOME/.claude/settings.json" "$SCRATCH/before.json" && echo "settings.json: as before"
