// Sessions: a project's agent sessions, newest first, each saying how it ended, its tool
// errors and what it cost; from a row a person opens the session's analysis and its
// hypotheses.

import { TENANT_ID, get } from "./api.js";
import {
  dl,
  field,
  h,
  idInput,
  input,
  loading,
  more,
  problem,
  queryForm,
  replace,
  select,
  when,
} from "./dom.js";

const STATES = [
  ["", "Any"],
  ["open", "Open"],
  ["closed", "Closed"],
  ["closed_abnormally", "Closed abnormally"],
];

export async function render(main, params, navigate) {
  const form = queryForm(
    "Which sessions",
    [
      field("Project", idInput("project", params.project, { required: true, pattern: TENANT_ID })),
      field("Agent", input("agent", params.agent)),
      field("State", select("state", params.state, STATES)),
    ],
    navigate,
  );
  const results = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Sessions",
  });
  replace(main, h("h1", {}, "Sessions"), form, results);
  if (params.project) await showPage(results, params);
}

function projectPath(project, suffix = "") {
  return `/projects/${encodeURIComponent(project)}${suffix}`;
}

async function showPage(results, params, pageToken) {
  const body = pageToken ? results.querySelector("table.sessions tbody") : null;
  if (!body) replace(results, loading("sessions"));
  let page;
  try {
    page = await get(projectPath(params.project, "/sessions"), {
      agent: params.agent,
      state: params.state,
      pageToken,
    });
  } catch (error) {
    return replace(results, problem(error));
  }
  const rows = page.body.map((row) => sessionRow(params.project, row));
  if (body) body.append(...rows);
  else if (!rows.length) replace(results, h("p", {}, "No session matches."));
  else replace(results, table(rows));
  more(results, page.headers.get("X-Next-Page-Token"), (next) => showPage(results, params, next));
}

function table(rows) {
  const heads = [
    "Session",
    "Agents",
    "Source",
    "Ended",
    "Events",
    "Tool errors",
    "Tokens in / out",
    "Cost",
    "Open",
  ];
  return h(
    "table",
    { class: "sessions" },
    h("caption", {}, "Newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        heads.map((text) => h("th", { scope: "col" }, text)),
      ),
    ),
    h("tbody", {}, rows),
  );
}

function ending(row) {
  const pauses = row.resumedCount === 1 ? "a pause" : `${row.resumedCount} pauses`;
  const resumed = row.resumedCount ? `, resumed after ${pauses}` : "";
  if (row.state === "open") return `open${resumed}`;
  const state = row.state === "closed" ? "closed" : "closed abnormally";
  const cause = row.cause ? ` (${row.cause})` : "";
  const silence = row.endedBySilence ? " by silence, until its next record" : "";
  return `${state}${cause}${silence}${resumed}`;
}

function cost(usage) {
  if (usage.costUsd == null) return usage.from === "none" ? "not reported" : "no cost reported";
  return `$${usage.costUsd.toFixed(4)}`;
}

function sessionRow(project, row) {
  const hypotheses = `#/hypotheses?${new URLSearchParams({ project, sessionId: row.sessionId })}`;
  const detail = h("div", { class: "analysis", "aria-live": "polite" });
  const open = h("button", { type: "button", class: "secondary" }, "Analysis");
  open.disabled = !row.lastAnalysisId;
  open.addEventListener("click", () => showAnalysis(detail, project, row.lastAnalysisId));
  return h(
    "tr",
    { "data-session": row.sessionId, "data-state": row.state },
    h("th", { scope: "row" }, h("code", {}, row.sessionId), h("br"), when(row.createdAt)),
    h("td", {}, row.agents.join(", ")),
    h("td", {}, row.source ?? "events API"),
    h("td", { class: "ending" }, ending(row)),
    h("td", { class: "events" }, String(row.eventCount)),
    h("td", { class: "tool-errors" }, String(row.toolErrors)),
    h("td", { class: "tokens" }, `${row.usage.inputTokens} / ${row.usage.outputTokens}`),
    h("td", { class: "cost" }, cost(row.usage)),
    h("td", {}, open, " ", h("a", { href: hypotheses }, "Hypotheses"), detail),
  );
}

async function showAnalysis(detail, project, analysisId) {
  replace(detail, loading("the analysis"));
  try {
    const reply = await get(projectPath(project, `/analyses/${encodeURIComponent(analysisId)}`));
    const analysis = reply.body;
    replace(
      detail,
      dl([
        ["Status", analysis.status],
        ["Failure", analysis.failureCode ?? "none"],
        ["Hypotheses stored", String(analysis.hypothesisIds.length)],
      ]),
    );
  } catch (error) {
    replace(detail, problem(error));
  }
}
