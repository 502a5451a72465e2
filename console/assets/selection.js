// AgentConnect's selection report: how the sessions each chosen target led to ended,
// with 95% intervals, what other thresholds would have given, and a recommendation a
// person may put (nothing changes by itself).

import { call, get } from "./api.js";
import {
  disclosure,
  dl,
  field,
  h,
  input,
  json,
  loading,
  problem,
  queryForm,
  replace,
  when,
} from "./dom.js";
import { instant } from "./calibration.js";
import { agentFields, targetText } from "./evaluations.js";

export async function render(main, params, navigate) {
  const form = queryForm(
    "Which agent",
    [
      ...agentFields(params),
      field(
        "Since",
        input("since", params.since, { type: "date" }),
        "Empty: 30 days before Until.",
      ),
      field("Until", input("until", params.until, { type: "date" }), "Empty: now."),
    ],
    navigate,
  );
  const results = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Selection report",
  });
  replace(main, h("h1", {}, "Selection report"), form, results);
  if (!params.org || !params.agent) return;
  replace(results, loading("the report"));
  const agent = `/v1/orgs/${encodeURIComponent(params.org)}/agents/${encodeURIComponent(params.agent)}`;
  try {
    const reply = await get(`${agent}/selection-report`, {
      since: instant(params.since),
      until: instant(params.until),
    });
    replace(results, ...reportView(reply.body, agent));
  } catch (error) {
    replace(results, problem(error));
  }
}

const percent = (value) => (value === null ? "–" : `${(value * 100).toFixed(1)}%`);

// A share with its interval: "33.3% (9.7%–70.0%), 1 of 3".
function share(found) {
  if (found.share === null) return "no joined session";
  return `${percent(found.share)} (${percent(found.low)}–${percent(found.high)}), ${found.count} of ${found.sessions}`;
}

function reportView(report, agent) {
  const source = report.source;
  const linked =
    source.status === "linked"
      ? `project ${source.projectId}, agent ${source.agent}`
      : source.status === "access_lost"
        ? `project ${source.projectId}: its author can no longer view it`
        : "not linked";
  const sessions = report.sessions;
  return [
    dl([
      ["Outcome source", linked],
      ["Window", [when(report.since), " to ", when(report.until)]],
      [
        "Sessions",
        `${sessions.started} started, ${sessions.recorded} recorded, ${sessions.joined} joined`,
      ],
    ]),
    report.notJoined.length
      ? h("ul", { class: "not-joined" }, ...report.notJoined.map((said) => h("li", {}, said)))
      : null,
    targetsTable(report.targets),
    explorationView(report.exploration),
    recommendationView(report, agent),
    disclosure(
      "Method and what it cannot tell",
      h("p", {}, report.method),
      ...report.caveats.map((said) => h("p", {}, said)),
    ),
  ];
}

function targetsTable(targets) {
  if (!targets.length) return h("p", { class: "empty" }, "No recorded session in this window.");
  return h(
    "table",
    { class: "targets" },
    h("caption", {}, "Per target chosen: joined sessions, with 95% intervals"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        [
          "Target",
          "Joined",
          "Ended abnormally",
          "Reopened tasks",
          "Repeated tool errors",
          "Led there by",
        ].map((name) => h("th", { scope: "col" }, name)),
      ),
    ),
    h(
      "tbody",
      {},
      ...targets.map((target) =>
        h(
          "tr",
          { dataset: { target: target.targetKey } },
          h("th", { scope: "row" }, targetText(target.target)),
          h("td", {}, `${target.sessions} of ${target.recorded}`),
          h("td", {}, share(target.abnormalEnds)),
          h("td", {}, share(target.signals.task_reopened)),
          h("td", {}, share(target.signals.tool_error_repeated)),
          h(
            "td",
            {},
            target.routes.map((route) => `${route.route} × ${route.sessions}`).join(", "),
          ),
        ),
      ),
    ),
  );
}

function estimateText(estimate) {
  if (estimate.abnormalShare === null) return `too few matching sessions (${estimate.matched})`;
  return `${percent(estimate.abnormalShare)} (${percent(estimate.low)}–${percent(estimate.high)}), ${estimate.matched} matching`;
}

function explorationView(exploration) {
  const status = {
    off: "Exploration is off: the shares above are associations, not comparisons.",
    too_few_explored: `Too few explored sessions to tell (${exploration.explored} of the ${exploration.minimumExplored} needed).`,
    estimated: `Estimated from ${exploration.explored} explored sessions.`,
  }[exploration.status];
  const parts = [
    h("h2", {}, "What other thresholds would have given"),
    h("p", { class: "exploration-status" }, status),
  ];
  if (exploration.status !== "estimated") return h("section", { class: "exploration" }, ...parts);
  parts.push(h("p", {}, `Current rules: ${estimateText(exploration.current)}`));
  parts.push(
    h(
      "table",
      { class: "candidates" },
      h("caption", {}, "Threshold changes, abnormal-end share estimated off-policy"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Change", "Estimate", "Against current", "Better"].map((name) =>
            h("th", { scope: "col" }, name),
          ),
        ),
      ),
      h(
        "tbody",
        {},
        ...exploration.candidates.map((candidate) => {
          const change = candidate.change;
          const gap = candidate.difference;
          return h(
            "tr",
            { class: candidate.better ? "better" : "" },
            h(
              "th",
              { scope: "row" },
              `${change.stepId}, rule ${change.rule}: ${change.value} ${change.from} → ${change.to}`,
            ),
            h(
              "td",
              {},
              candidate.unsupported
                ? `not served: ${candidate.unsupported} sessions never drawn`
                : estimateText(candidate.estimate),
            ),
            h(
              "td",
              {},
              gap
                ? `${(gap.value * 100).toFixed(1)} pts (${(gap.low * 100).toFixed(1)} to ${(gap.high * 100).toFixed(1)})`
                : "–",
            ),
            h("td", {}, candidate.better ? "yes" : "no"),
          );
        }),
      ),
    ),
  );
  return h("section", { class: "exploration" }, ...parts);
}

function recommendationView(report, agent) {
  const recommended = report.recommendation;
  if (!recommended)
    return h("p", { class: "recommendation none" }, "No change is better at the interval level.");
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  const apply = h("button", { type: "button" }, "Put this selection");
  apply.addEventListener("click", async () => {
    try {
      const put = await call("PUT", `${agent}/model-selection`, { body: recommended.selection });
      replace(
        outcome,
        h(
          "p",
          { role: "status" },
          `Stored as version ${put.body.version}, recorded as recommended by report ${report.reportId}.`,
        ),
      );
    } catch (error) {
      replace(outcome, problem(error));
    }
  });
  return h(
    "section",
    { class: "recommendation" },
    h("h2", {}, "Recommendation"),
    h("p", {}, recommended.change),
    disclosure("The selection body", json(recommended.selection)),
    apply,
    outcome,
  );
}
