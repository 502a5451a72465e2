// Home: what the signed-in person can see, by name: their projects, orgs (with their
// agents) and workspaces, their role in each and today's activity, each a link to its views.
// One read, GET /v1/home, kept for the tab's sign-in so other views can name things too.

import { get } from "./api.js";
import { copyableId, h, loading, problem, replace } from "./dom.js";

let cached = null;

// The start of the reader's day, so "today" is theirs, not UTC's.
function startOfToday() {
  const now = new Date();
  return new Date(now.getFullYear(), now.getMonth(), now.getDate()).toISOString();
}

// GET /v1/home, read once per sign-in (a view that names orgs and agents reads it too).
export function homeData(fresh = false) {
  if (fresh || !cached) {
    cached = get("/v1/home", { since: startOfToday() }).then((reply) => reply.body);
    cached.catch(() => {
      cached = null;
    });
  }
  return cached;
}

export function forgetHome() {
  cached = null;
}

// "Acme", or the id where there is no name.
export function nameOf(thing) {
  return thing?.name || thing?.id || "";
}

// The org and agent a trial runs in, by name where there is one.
export async function agentNamed(orgId, agentId) {
  try {
    const home = await homeData();
    const org = home.tenants.find((t) => t.kind === "org" && t.id === orgId);
    const agent = org?.agents?.find((a) => a.id === agentId);
    return { org: org ?? { id: orgId, name: null }, agent: agent ?? { id: agentId, name: null } };
  } catch {
    return { org: { id: orgId, name: null }, agent: { id: agentId, name: null } };
  }
}

const link = (view, params, text) =>
  h("a", { href: `#/${view}?${new URLSearchParams(params)}` }, text);

const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function heading(tenant, kind) {
  return h(
    "header",
    {},
    h("h3", {}, nameOf(tenant)),
    h("p", { class: "meta" }, `${kind} · your role: ${tenant.role} · `, copyableId(tenant.id)),
  );
}

function projectCard(project) {
  const activity = project.activity;
  const params = { project: project.id };
  return h(
    "li",
    { class: "tenant", dataset: { kind: "project", id: project.id } },
    heading(project, "Project"),
    h(
      "ul",
      { class: "activity", "aria-label": "Today" },
      h("li", {}, count(activity.sessionsEnded, "session ended today", "sessions ended today")),
      h(
        "li",
        {},
        count(
          activity.hypothesesProposed,
          "hypothesis proposed today",
          "hypotheses proposed today",
        ),
      ),
      h("li", {}, count(activity.trialsRunning, "trial running", "trials running")),
    ),
    h(
      "p",
      { class: "links" },
      link("sessions", params, "Sessions"),
      link("hypotheses", params, "Hypotheses"),
      link("patterns", params, "Patterns"),
      link("calibration", params, "Calibration"),
    ),
  );
}

function agentRow(org, agent) {
  const params = { org: org.id, agent: agent.id };
  return h(
    "tr",
    { dataset: { agent: agent.id } },
    h(
      "th",
      { scope: "row" },
      agent.name ?? "(not linked to a project)",
      h("br"),
      copyableId(agent.id),
    ),
    h("td", {}, agent.sessionsStarted),
    h("td", {}, agent.trialsRunning),
    h(
      "td",
      { class: "links" },
      link("evaluations", params, "Model evaluations"),
      link("selection", params, "Selection report"),
      link("instructions", params, "Instructions"),
    ),
  );
}

function orgCard(org) {
  const agents = org.agents ?? [];
  return h(
    "li",
    { class: "tenant", dataset: { kind: "org", id: org.id } },
    heading(org, "Org"),
    agents.length
      ? h(
          "div",
          // Focusable, so that a keyboard can scroll it sideways on a narrow screen.
          { class: "wide", tabindex: 0, role: "region", "aria-label": `Agents of ${nameOf(org)}` },
          h(
            "table",
            { class: "agents" },
            h("caption", {}, `Agents of ${nameOf(org)}`),
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ["Agent", "Sessions started", "Trials running", "Views"].map((name) =>
                  h("th", { scope: "col" }, name),
                ),
              ),
            ),
            h(
              "tbody",
              {},
              agents.map((agent) => agentRow(org, agent)),
            ),
          ),
        )
      : h("p", {}, "No agent yet: an agent appears once its model selection is put."),
  );
}

function workspaceCard(workspace) {
  return h(
    "li",
    { class: "tenant", dataset: { kind: "workspace", id: workspace.id } },
    heading(workspace, "Workspace"),
    h("p", { class: "links" }, link("research", { workspace: workspace.id }, "Research runs")),
  );
}

const SECTIONS = [
  ["project", "Projects", projectCard, "Psychologist: sessions, hypotheses, patterns and trials."],
  ["org", "Orgs", orgCard, "AgentConnect: agents, their model evaluations and reports."],
  ["workspace", "Workspaces", workspaceCard, "Research: answers beside their evidence."],
];

export async function render(main) {
  const results = h("section", { class: "results", "aria-live": "polite", "aria-label": "Home" });
  replace(main, h("h1", {}, "Home"), results);
  replace(results, loading("what you can see"));
  let home;
  try {
    home = await homeData(true);
  } catch (error) {
    return replace(results, problem(error));
  }
  if (!home.tenants.length) {
    return replace(
      results,
      h(
        "p",
        { class: "empty" },
        `${home.userId} is not a member of any project, org or workspace this token reaches. `,
        "An admin adds members with ",
        h("code", {}, "evidencia admin member add"),
        ".",
      ),
    );
  }
  const sections = SECTIONS.map(([kind, title, view, about]) => {
    const tenants = home.tenants.filter((tenant) => tenant.kind === kind);
    if (!tenants.length) return null;
    return h(
      "section",
      { class: "tenants", "aria-labelledby": `home-${kind}` },
      h("h2", { id: `home-${kind}` }, title),
      h("p", { class: "about" }, about),
      h("ul", { class: "tenants" }, tenants.map(view)),
    );
  });
  replace(
    results,
    ...sections,
    home.truncated ? h("p", { class: "caveat" }, "Only the first 50 are listed.") : null,
  );
}
