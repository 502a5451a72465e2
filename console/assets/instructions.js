// AgentConnect: an agent's standing instructions. The version in force, every version
// with who made it, when, why and the trial it came from, a line diff between any two, and
// for an org's admin a new version or a rollback (each a new version: none is changed).

import { call, get } from "./api.js";
import { copyableId, field, h, loading, more, problem, queryForm, replace, when } from "./dom.js";
import { agentFields } from "./evaluations.js";
import { agentNamed } from "./home.js";

const PAGE = 10;
const TEXT_LIMIT = 8000;
const REASON_LIMIT = 500;

export async function render(main, params, navigate) {
  const form = queryForm("Which agent", agentFields(params), navigate);
  const results = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Instructions",
  });
  replace(main, h("h1", {}, "Instructions"), form, results);
  if (!params.org || !params.agent) return;
  await show(results, params);
}

const agentPath = (params) =>
  `/v1/orgs/${encodeURIComponent(params.org)}/agents/${encodeURIComponent(params.agent)}`;

// The whole page from the API's answers; `current` is given when a PUT just answered it.
// Otherwise the version in force is the newest version, so the page asks only for what
// exists: an agent with no instructions yet is an empty list, not a 404 in the browser.
async function show(results, params, current) {
  replace(results, loading("the instructions"));
  const base = agentPath(params);
  let page, named;
  try {
    [page, named] = await Promise.all([
      get(`${base}/instructions/versions`, { limit: PAGE }),
      agentNamed(params.org, params.agent),
    ]);
  } catch (error) {
    return replace(results, problem(error));
  }
  // The org's role and the agent's project (its outcome source) as Home read them: a
  // version's trial, hypothesis and pattern open in that project.
  const view = {
    params,
    base,
    admin: ["admin", "owner"].includes(named.org.role),
    current: current ?? page.body[0] ?? null,
    project: named.agent.projectId ?? null,
    agentName: named.agent.name ?? null,
    versions: [],
    reload: (answered) => show(results, params, answered),
  };
  const list = h("ol", { class: "versions" });
  const versionsBox = h(
    "section",
    { class: "versions", "aria-labelledby": "instructions-versions" },
    h("h2", { id: "instructions-versions" }, "Versions, newest first"),
    view.project
      ? null
      : h(
          "p",
          { class: "about" },
          "The agent is not linked to a project, so its versions' sessions are not counted and the trials they came from are named by id.",
        ),
    list,
  );
  const compare = h("section", { class: "compare", "aria-labelledby": "instructions-diff" });
  const addVersions = (versions, next) => {
    view.versions.push(...versions);
    list.append(...versions.map((version) => h("li", {}, versionCard(view, version))));
    comparePanel(compare, view);
    more(versionsBox, next, async (token) => {
      try {
        const reply = await get(`${base}/instructions/versions`, { limit: PAGE, pageToken: token });
        addVersions(reply.body, reply.headers.get("X-Next-Page-Token"));
      } catch (error) {
        versionsBox.append(problem(error));
      }
    });
  };
  replace(
    results,
    h("p", { class: "meta" }, "Agent ", agentInOrg(named)),
    currentSection(view),
    view.admin ? editForm(view) : roleLine(),
    compare,
    versionsBox,
  );
  addVersions(page.body, page.headers.get("X-Next-Page-Token"));
  if (!page.body.length) versionsBox.append(h("p", { class: "empty" }, "No version yet."));
}

function agentInOrg({ org, agent }) {
  return [
    h("strong", {}, agent.name ?? agent.id),
    " in ",
    h("strong", {}, org.name ?? org.id),
    " (",
    copyableId(agent.id),
    ")",
  ];
}

function roleLine() {
  return h(
    "p",
    { class: "cannot-edit" },
    "You may read the instructions, not change them: an admin of the org changes them.",
  );
}

function currentSection(view) {
  const current = view.current;
  return h(
    "section",
    { class: "current", "aria-labelledby": "instructions-current" },
    h(
      "h2",
      { id: "instructions-current" },
      current ? `In force: version ${current.version}` : "In force: none",
    ),
    current
      ? [
          h("pre", { class: "instructions-text", tabindex: 0 }, current.text),
          h("p", { class: "meta" }, madeWords(current)),
          h(
            "p",
            { class: "about" },
            "Sessions started from now on are served this version; a running session keeps the version it started with.",
          ),
        ]
      : h(
          "p",
          { class: "empty" },
          "This agent has no instructions yet: its sessions are served none.",
        ),
  );
}

// "Made by ada, 12/5/2026, 3:01:00 AM: Our house rules."
function madeWords(version) {
  return [
    `Made by ${version.createdBy}, `,
    when(version.createdAt),
    version.reason ? [": ", h("q", {}, version.reason)] : ", with no reason given",
  ];
}

const route = (view, params) =>
  `#/${view}?${new URLSearchParams(Object.entries(params).filter(([, value]) => value))}`;

// Where a version came from, each link to its page: a trial of a pattern opens the pattern
// (which shows its trial); a trial of a hypothesis opens the hypothesis's card (which shows
// its trial). Without a linked project, the ids alone.
function origin(view, from) {
  if (!from) return "A person's edit or a rollback.";
  const project = view.project;
  const link = (href, text) => (project ? h("a", { href }, text) : h("code", {}, text));
  const hypothesisHref = route("hypotheses", {
    project,
    status: "accepted",
    agenteAlvo: view.agentName,
    hypothesis: from.hypothesisId,
  });
  const patternHref = route("patterns", { project, pattern: from.patternId });
  const parts = [
    "Adopted from trial ",
    link(from.patternId ? patternHref : hypothesisHref, from.trialId),
  ];
  if (from.hypothesisId) parts.push(", of hypothesis ", link(hypothesisHref, from.hypothesisId));
  if (from.patternId) parts.push(", of pattern ", link(patternHref, from.patternId));
  parts.push(".");
  return h("span", { class: "from" }, parts);
}

function percent(share) {
  if (share === null || share === undefined) return "–";
  const value = share * 100;
  return value > 0 && value < 10 ? `${value.toFixed(1)}%` : `${Math.round(value)}%`;
}

// The sessions that ran under a version, when the API gives them.
function sessionsWords(sessions) {
  if (sessions === undefined) return null;
  if (sessions === null)
    return "Not counted: the agent is not linked to a project its link's author may view.";
  if (sessions.joined === 0) return "No session of this version has ended yet.";
  const ended = `${sessions.abnormalEnds} of ${sessions.joined} ended abnormally`;
  if (sessions.abnormalShare === null) return `${ended}.`;
  return `${ended} (${percent(sessions.abnormalShare)}; 95% interval ${percent(sessions.low)} to ${percent(sessions.high)}).`;
}

function versionCard(view, version) {
  const isCurrent = view.current?.version === version.version;
  const sessions = sessionsWords(version.sessions);
  return h(
    "article",
    { class: "version", dataset: { version: String(version.version) } },
    h(
      "h3",
      {},
      `Version ${version.version}`,
      isCurrent ? [" ", h("span", { class: "badge current" }, "in force")] : null,
    ),
    h("p", { class: "meta" }, madeWords(version)),
    h("p", { class: "origin" }, origin(view, version.from)),
    sessions
      ? h(
          "p",
          { class: "sessions" },
          h("strong", {}, "Its sessions: "),
          sessions,
          version.sessions
            ? h("span", { class: "caveat" }, " An association over time, not an effect.")
            : null,
        )
      : null,
    h("pre", { class: "instructions-text", tabindex: 0 }, version.text),
    view.admin && !isCurrent ? rollback(view, version) : null,
  );
}

// A new version with an earlier one's text, asked for in one more step with its reason.
function rollback(view, version) {
  const open = h("button", { type: "button", class: "secondary" }, "Roll back to this version");
  const holder = h("div", { class: "rollback" }, open);
  open.addEventListener("click", () => {
    const reason = h("input", {
      name: "reason",
      id: `rollback-reason-${version.version}`,
      maxlength: REASON_LIMIT,
      autocomplete: "off",
    });
    const keep = h("button", { type: "button", class: "secondary" }, "Cancel");
    const outcome = h("div", { class: "outcome", "aria-live": "polite" });
    const form = h(
      "form",
      { class: "rollback", "aria-label": `Roll back to version ${version.version}` },
      h(
        "p",
        { class: "confirm" },
        `A new version with version ${version.version}'s text; every version stays in the history.`,
      ),
      field("Reason (optional)", reason),
      h("button", { type: "submit" }, `Roll back to version ${version.version}`),
      " ",
      keep,
      outcome,
    );
    keep.addEventListener("click", () => {
      replace(holder, open);
      open.focus();
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      putVersion(view, { fromVersion: version.version }, reason, outcome);
    });
    replace(holder, form);
    reason.focus();
  });
  return holder;
}

// A new version (a text or a rollback), with its reason if one is given: the page drawn
// again from the API's answer, or the refusal said in `outcome`.
async function putVersion(view, body, reason, outcome) {
  if (reason.value.trim()) body.reason = reason.value.trim();
  try {
    const reply = await call("PUT", `${view.base}/instructions`, { body });
    await view.reload(reply.body);
  } catch (error) {
    replace(outcome, problem(error));
  }
}

function editForm(view) {
  const text = h(
    "textarea",
    { name: "text", id: "instructions-text", rows: 8, maxlength: TEXT_LIMIT, required: true },
    view.current?.text ?? "",
  );
  const reason = h("input", {
    name: "reason",
    id: "instructions-reason",
    maxlength: REASON_LIMIT,
    autocomplete: "off",
  });
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "edit-instructions", "aria-labelledby": "instructions-edit" },
    h("h2", { id: "instructions-edit" }, "Change the instructions"),
    field(
      "Text",
      text,
      `At most ${TEXT_LIMIT.toLocaleString()} characters: a runtime reads them on every turn.`,
    ),
    field("Reason (optional)", reason),
    h("button", { type: "submit" }, "Save as a new version"),
    outcome,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    putVersion(view, { text: text.value }, reason, outcome);
  });
  return form;
}

// Two versions picked from those loaded (the one before the newest and the newest at
// first), and the lines that differ between them.
function comparePanel(box, view) {
  const versions = view.versions;
  if (versions.length < 2) {
    return replace(
      box,
      h("h2", { id: "instructions-diff" }, "Compare versions"),
      h("p", { class: "empty" }, "One version or none: nothing to compare yet."),
    );
  }
  const kept = (name) => box.querySelector(`select[name=${name}]`)?.value;
  const options = (chosen) =>
    versions.map((version) =>
      h(
        "option",
        { value: String(version.version), selected: String(version.version) === chosen },
        `Version ${version.version}`,
      ),
    );
  const from = h(
    "select",
    { name: "from", id: "diff-from" },
    options(kept("from") ?? String(versions[1].version)),
  );
  const to = h(
    "select",
    { name: "to", id: "diff-to" },
    options(kept("to") ?? String(versions[0].version)),
  );
  const shown = h("div", { class: "diff-body", "aria-live": "polite" });
  const draw = () => {
    const a = versions.find((version) => String(version.version) === from.value);
    const b = versions.find((version) => String(version.version) === to.value);
    replace(shown, diffView(a, b));
  };
  from.addEventListener("change", draw);
  to.addEventListener("change", draw);
  replace(
    box,
    h("h2", { id: "instructions-diff" }, "Compare versions"),
    h("div", { class: "pick" }, field("From", from), field("To", to)),
    shown,
  );
  draw();
}

// The lines of `b` against those of `a`: a longest common subsequence of whole lines (the
// text is at most 8,000 characters, so the table is small), each line kept, added or removed.
export function lineDiff(a, b) {
  const left = a.split("\n");
  const right = b.split("\n");
  const rows = left.length + 1;
  const cols = right.length + 1;
  const common = new Uint32Array(rows * cols);
  for (let i = left.length - 1; i >= 0; i--) {
    for (let j = right.length - 1; j >= 0; j--) {
      common[i * cols + j] =
        left[i] === right[j]
          ? common[(i + 1) * cols + j + 1] + 1
          : Math.max(common[(i + 1) * cols + j], common[i * cols + j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i < left.length && j < right.length && left[i] === right[j]) {
      lines.push(["same", left[i]]);
      i++;
      j++;
    } else if (
      j < right.length &&
      (i === left.length || common[i * cols + j + 1] >= common[(i + 1) * cols + j])
    ) {
      lines.push(["added", right[j]]);
      j++;
    } else {
      lines.push(["removed", left[i]]);
      i++;
    }
  }
  return lines;
}

const MARK = { added: "+", removed: "−", same: " " };
const SAID = { added: "Added: ", removed: "Removed: ", same: "" };

function diffView(a, b) {
  if (a.version === b.version)
    return h("p", { class: "empty" }, "The same version twice: pick two to compare.");
  const lines = lineDiff(a.text, b.text);
  const added = lines.filter(([kind]) => kind === "added").length;
  const removed = lines.filter(([kind]) => kind === "removed").length;
  const summary =
    added + removed === 0
      ? `Versions ${a.version} and ${b.version} have the same text.`
      : `From version ${a.version} to version ${b.version}: ${added} ${added === 1 ? "line" : "lines"} added, ${removed} removed.`;
  return [
    h("p", { class: "diff-summary" }, summary),
    h(
      "ol",
      { class: "diff", tabindex: 0, "aria-label": `Lines of version ${b.version}` },
      lines.map(([kind, line]) => {
        const inner = kind === "added" ? "ins" : kind === "removed" ? "del" : "span";
        return h(
          "li",
          { class: kind },
          h("span", { class: "mark", "aria-hidden": "true" }, MARK[kind]),
          SAID[kind] ? h("span", { class: "visually-hidden" }, SAID[kind]) : null,
          h(inner, {}, line),
        );
      }),
    ),
  ];
}
