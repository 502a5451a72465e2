// Patterns: the failures that recur across an agent's sessions, ranked, each counted over
// every ended session of its agent in the window (k of n, with its 95% interval). Opened, a
// pattern shows its examples beside the events they cite, its member sessions, hypotheses
// and trial, and the claims refused from its label, which are never served as it.

import { TENANT_ID, get, post } from "./api.js";
import { citedEvent, citedEvents } from "./audit.js";
import { TRIAL_VERDICTS, startTrial, trialState } from "./hypotheses.js";
import {
  copyableId,
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

const STATUSES = [
  ["", "Any status"],
  ["open", "Open"],
  ["accepted", "Accepted"],
  ["dismissed", "Dismissed"],
  ["resolved", "Resolved"],
];
const RANKS = [
  ["sessions", "Matching sessions"],
  ["cost", "Cost"],
];
const POLL_MS = 1000;
const DAY_MS = 86_400_000;

export async function render(main, params, navigate) {
  const form = queryForm(
    "Which patterns",
    [
      field("Project", idInput("project", params.project, { required: true, pattern: TENANT_ID })),
      field("Agent", input("agent", params.agent), "Empty: every agent of the project."),
      field("Status", select("status", params.status, STATUSES)),
      field("Rank by", select("sort", params.sort, RANKS)),
    ],
    navigate,
  );
  const tools = h("div", { class: "pattern-tools" });
  const results = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Patterns",
  });
  replace(main, h("h1", {}, "Patterns"), form, tools, results);
  if (!params.project) return;
  if (params.pattern) return showPattern(results, params);
  refreshPanel(tools, params, () => showList(results, params));
  await showList(results, params);
}

const projectPath = (project, suffix = "") => `/projects/${encodeURIComponent(project)}${suffix}`;

const route = (view, params) =>
  `#/${view}?${new URLSearchParams(Object.entries(params).filter(([, value]) => value))}`;

// The list's own filters, kept when a pattern is opened and when it is left.
const listParams = (params) => ({
  project: params.project,
  agent: params.agent,
  status: params.status,
  sort: params.sort,
});

// 0.273 → "27%"; below 10%, one decimal ("4.5%").
function percent(share) {
  if (share === null || share === undefined) return "–";
  const value = share * 100;
  return value > 0 && value < 10 ? `${value.toFixed(1)}%` : `${Math.round(value)}%`;
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// "4 of 15 sessions (27%; 95% interval 11% to 52%)".
export function shareWords(sessions) {
  if (sessions.total === 0) return "no ended session counted";
  const counted = `${sessions.matching} of ${plural(sessions.total, "session", "sessions")}`;
  return `${counted} (${percent(sessions.share)}; 95% interval ${percent(sessions.low)} to ${percent(sessions.high)})`;
}

function costWords(cost) {
  const tokens = `${cost.inputTokens} tokens in, ${cost.outputTokens} out`;
  if (cost.usd === null) return `no cost reported (${tokens})`;
  return `$${cost.usd.toFixed(4)} (${tokens})`;
}

// A date in the reader's locale, its ISO form in the tooltip.
function day(iso) {
  if (!iso) return "—";
  return h("time", { datetime: iso, title: iso }, new Date(iso).toLocaleDateString());
}

// The Monday that starts an ISO week ("2026-W45"), at midnight UTC.
function mondayOf(week) {
  const [year, number] = week.split("-W").map(Number);
  const fourth = new Date(Date.UTC(year, 0, 4));
  const monday = 4 - ((fourth.getUTCDay() + 6) % 7) + (number - 1) * 7;
  return new Date(Date.UTC(year, 0, monday));
}

function weekWords(week) {
  const monday = mondayOf(week.week).toLocaleDateString(undefined, { timeZone: "UTC" });
  return `Week of ${monday}: ${week.matching} of ${plural(week.total, "session", "sessions")}`;
}

// The weekly trend: per week, a bar of the agent's ended sessions with the pattern's share
// of them filled, on one scale. Each week is a list item whose words are its text
// equivalent (the bars are only drawn for the eye).
function trend(weekly) {
  if (!weekly.length) return h("span", { class: "empty" }, "no week counted");
  const most = Math.max(1, ...weekly.map((week) => week.total));
  const latest = weekly.at(-1);
  const bars = h(
    "ol",
    { class: "trend", "aria-label": "Sessions per week" },
    weekly.map((week) => {
      const total = h("span", { class: "total", "aria-hidden": "true" });
      const matching = h("span", { class: "matching", "aria-hidden": "true" });
      // Heights through the CSSOM, which the console's style-src 'self' admits.
      total.style.height = `${(week.total / most) * 100}%`;
      matching.style.height = `${(week.matching / most) * 100}%`;
      return h(
        "li",
        {
          title: weekWords(week),
          dataset: { week: week.week, matching: String(week.matching), total: String(week.total) },
        },
        total,
        matching,
        h("span", { class: "visually-hidden" }, weekWords(week)),
      );
    }),
  );
  // For the eye, the latest week in words beside the bars (the list says every week).
  const words = `${latest.matching} of ${latest.total} in the latest week`;
  return h(
    "span",
    { class: "weekly" },
    bars,
    h("span", { class: "latest", "aria-hidden": "true" }, words),
  );
}

function titleOf(pattern) {
  return pattern.title ?? "Untitled";
}

function facts(pattern) {
  return dl([
    ["Sessions", h("span", { class: "share" }, shareWords(pattern.sessions))],
    ["Weekly", trend(pattern.weekly)],
    ["Cost", h("span", { class: "cost" }, costWords(pattern.cost))],
    [
      "Seen",
      h(
        "span",
        { class: "seen" },
        "first ",
        day(pattern.firstSeen),
        ", last ",
        day(pattern.lastSeen),
      ),
    ],
  ]);
}

function badge(pattern) {
  return h("span", { class: `badge ${pattern.status}` }, pattern.status);
}

// An untitled pattern is said by its most central member's failure sentence.
function central(pattern) {
  if (pattern.title !== null) return null;
  return h("p", { class: "central" }, h("q", {}, pattern.description ?? ""));
}

// "412 of 430 ended sessions summarised in the last 30 days".
function coverageLine(body, params) {
  const { sessionsEnded: ended, sessionsSummarised: summarised } = body.coverage;
  const whose = params.agent ? `of ${params.agent}'s ` : "";
  if (ended === 0)
    return h(
      "p",
      { class: "coverage" },
      `No ended session ${whose}counted yet: a refresh counts the sessions that ended in its window and groups their failures.`,
    );
  const days = Math.round((Date.parse(body.window.until) - Date.parse(body.window.since)) / DAY_MS);
  const left = ended - summarised;
  return h(
    "p",
    { class: "coverage" },
    h(
      "strong",
      {},
      `${summarised} of ${ended} ended sessions ${whose}summarised in the last ${plural(days, "day", "days")}`,
    ),
    left
      ? `. ${plural(left, "was", "were")} not summarised (over budget or a failed summary), and still counted in every share below.`
      : ".",
    " As of the last refresh.",
  );
}

async function showList(results, params, pageToken) {
  const list = pageToken ? results.querySelector("ol.patterns") : null;
  if (!list) replace(results, loading("patterns"));
  let page;
  try {
    page = await get(projectPath(params.project, "/patterns"), {
      agent: params.agent,
      status: params.status,
      sort: params.sort,
      pageToken,
    });
  } catch (error) {
    return replace(results, problem(error));
  }
  const items = page.body.patterns.map((pattern, index) =>
    h("li", {}, patternCard(params, pattern, (list?.children.length ?? 0) + index + 1)),
  );
  if (list) list.append(...items);
  else {
    const ranking =
      params.sort === "cost"
        ? "Ranked by what their sessions cost, most first."
        : "Ranked by matching sessions, most first.";
    replace(
      results,
      coverageLine(page.body, params),
      items.length
        ? [h("p", { class: "ranking" }, ranking), h("ol", { class: "patterns" }, items)]
        : h("p", { class: "empty" }, "No pattern matches."),
    );
  }
  more(results, page.headers.get("X-Next-Page-Token"), (next) => showList(results, params, next));
}

function patternCard(params, pattern, rank) {
  const open = route("patterns", { ...listParams(params), pattern: pattern.id });
  return h(
    "article",
    { class: "pattern", dataset: { id: pattern.id, status: pattern.status } },
    h(
      "header",
      {},
      h(
        "h2",
        {},
        h("span", { class: "rank" }, `${rank}.`),
        " ",
        h("a", { href: open }, titleOf(pattern)),
        " ",
        badge(pattern),
      ),
      central(pattern),
      h(
        "p",
        { class: "meta" },
        `Agent ${pattern.agent}`,
        pattern.trialId
          ? [
              " · ",
              h(
                "a",
                {
                  class: "trial-link",
                  href: route("patterns", {
                    ...listParams(params),
                    pattern: pattern.id,
                    trial: pattern.trialId,
                  }),
                },
                "its trial",
              ),
            ]
          : null,
      ),
    ),
    facts(pattern),
  );
}

// The refresh, for those the API lets start one: its progress read every second until it
// completes or fails, then the list read again.
function refreshPanel(tools, params, reload) {
  replace(tools, loading("what you may do"));
  get(projectPath(params.project, "/access"))
    .then(({ body }) => {
      const refresh = body.operations.find(
        (op) => op.method === "POST" && op.path.endsWith("/patterns/refresh"),
      );
      if (!refresh?.allowed) {
        return replace(
          tools,
          h(
            "p",
            { class: "cannot-refresh" },
            `Signed in as ${body.userId} (${body.role}): you may read the patterns, not refresh them. ${refresh?.reason ?? "The API offers no refresh."}`,
          ),
        );
      }
      const status = h("p", { class: "refresh-status", role: "status" });
      const button = h("button", { type: "button", class: "refresh" }, "Refresh");
      button.addEventListener("click", () => startRefresh(params, button, status, reload));
      const which = params.agent ? `${params.agent}'s failures` : "every agent's failures";
      replace(
        tools,
        h(
          "div",
          { class: "refresh" },
          button,
          h(
            "span",
            { class: "hint" },
            `Group ${which} of the last 30 days again now (the sweep also does, on its schedule).`,
          ),
        ),
        status,
      );
    })
    .catch((error) => replace(tools, problem(error)));
}

async function startRefresh(params, button, status, reload) {
  button.disabled = true;
  let refresh;
  try {
    const reply = await post(
      projectPath(params.project, "/patterns/refresh"),
      params.agent ? { agent: params.agent } : {},
    );
    refresh = reply.body;
  } catch (error) {
    button.disabled = false;
    return replace(status, problem(error));
  }
  const path = projectPath(params.project, `/patterns/refreshes/${encodeURIComponent(refresh.id)}`);
  while (status.isConnected) {
    status.dataset.status = refresh.status;
    replace(status, progressWords(refresh));
    if (refresh.status === "completed" || refresh.status === "failed") break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    try {
      refresh = (await get(path)).body;
    } catch (error) {
      replace(status, problem(error));
      break;
    }
  }
  button.disabled = false;
  if (refresh.status === "completed" && status.isConnected) await reload();
}

function progressWords(refresh) {
  if (refresh.status === "queued") return "Refresh queued: it starts in a moment…";
  if (refresh.status === "running")
    return "Refreshing: embedding the new failure sentences, grouping and labelling…";
  if (refresh.status === "failed") {
    const failure = refresh.failure;
    const why = failure ? `${failure.code}${failure.detail ? `: ${failure.detail}` : ""}` : "";
    return h(
      "span",
      { class: "failed" },
      `The refresh failed (${why}). The patterns below are those of the last refresh that completed.`,
    );
  }
  const changes = refresh.changes;
  if (!changes) return "Refreshed.";
  return [
    "Refreshed ",
    when(refresh.completedAt),
    `: ${plural(changes.created.length, "new pattern", "new patterns")}, ${changes.kept.length} kept, ${changes.labelled.length} labelled, over ${plural(changes.sessionsEnded, "ended session", "ended sessions")} (${changes.sessionsSummarised} summarised).`,
  ];
}

// One pattern: its counts, label, examples beside their cited events, members, hypotheses,
// trial and refused claims.
async function showPattern(results, params) {
  replace(results, loading("the pattern"));
  const path = projectPath(params.project, `/patterns/${encodeURIComponent(params.pattern)}`);
  let reply;
  try {
    reply = await get(path);
  } catch (error) {
    return replace(results, backLink(params), problem(error));
  }
  const { pattern, refused, members, trial } = reply.body;
  const [events, hypotheses, operations] = await Promise.all([
    citedEvents(params.project, pattern.evidence),
    hypothesesOf(params.project, pattern),
    get(projectPath(params.project, "/access")).then(
      (access) => access.body.operations,
      () => [],
    ),
  ]);
  const membersBody = h("tbody", {});
  const membersBox = h(
    "section",
    { class: "members", "aria-labelledby": "pattern-members" },
    h("h3", { id: "pattern-members" }, "Member sessions"),
    h(
      "p",
      { class: "about" },
      "Sessions whose failure sentence is in this pattern, nearest its centre first. A session's link opens its hypotheses.",
    ),
    h(
      "div",
      { class: "wide", tabindex: 0, role: "region", "aria-label": "Table of member sessions" },
      h(
        "table",
        { class: "members" },
        h("caption", {}, `Of ${pattern.agent}'s sessions`),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Session", "Its failure sentence", "Distance from the centre", "Joined"].map((name) =>
              h("th", { scope: "col" }, name),
            ),
          ),
        ),
        membersBody,
      ),
    ),
  );
  const addMembers = (rows, next) => {
    membersBody.append(...rows.map((member) => memberRow(params, member)));
    more(membersBox, next, async (token) => {
      try {
        const page = await get(path, { pageToken: token });
        addMembers(page.body.members, page.headers.get("X-Next-Page-Token"));
      } catch (error) {
        membersBox.append(problem(error));
      }
    });
  };
  addMembers(members, reply.headers.get("X-Next-Page-Token"));
  replace(
    results,
    backLink(params),
    h(
      "article",
      { class: "pattern open", dataset: { id: pattern.id, status: pattern.status } },
      h(
        "header",
        {},
        h("h2", {}, titleOf(pattern), " ", badge(pattern)),
        central(pattern),
        h(
          "p",
          { class: "meta" },
          `Agent ${pattern.agent} · pattern `,
          copyableId(pattern.id),
          lineage(params, pattern),
        ),
      ),
      facts(pattern),
      byTarget(pattern),
      labelSection(pattern),
      examples(params, pattern, events),
      membersBox,
      related(params, pattern, hypotheses),
      trialSection(params, pattern, trial, operations, () => showPattern(results, params)),
      refusedSection(params, refused),
    ),
  );
  // Opened as the trial's link: its section in view.
  if (params.trial) results.querySelector("section.pattern-trial")?.scrollIntoView();
}

function backLink(params) {
  return h(
    "p",
    { class: "back" },
    h("a", { href: route("patterns", listParams(params)) }, "All patterns"),
  );
}

function lineage(params, pattern) {
  const to = (id) =>
    h("a", { href: route("patterns", { ...listParams(params), pattern: id }) }, id);
  if (pattern.splitFrom) return [" · split from ", to(pattern.splitFrom)];
  if (pattern.mergedInto) return [" · merged into ", to(pattern.mergedInto)];
  return null;
}

function labelSection(pattern) {
  const untitled = pattern.title === null;
  return h(
    "section",
    { class: "label", "aria-labelledby": "pattern-label" },
    h("h3", { id: "pattern-label" }, "What goes wrong"),
    untitled
      ? h(
          "p",
          { class: "caveat" },
          "Untitled: no label the model wrote held when its claims were checked against the events they cite, so the pattern is said by its most central session's failure sentence.",
        )
      : null,
    dl([
      ["Description", pattern.description ?? "—"],
      [
        "Suggested instruction change",
        pattern.sugestao ?? "None: only a label whose claims hold suggests one.",
      ],
    ]),
    h(
      "p",
      { class: "caveat" },
      "A pattern groups the model's sentences about failures that read alike; it is not a cause.",
    ),
  );
}

function byTarget(pattern) {
  if (!pattern.byTarget.length) return null;
  return h(
    "div",
    { class: "wide", tabindex: 0, role: "region", "aria-label": "Table by target chosen" },
    h(
      "table",
      { class: "targets" },
      h("caption", {}, "By the runtime and model chosen for the session"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Runtime", "Model", "Sessions"].map((name) => h("th", { scope: "col" }, name)),
        ),
      ),
      h(
        "tbody",
        {},
        pattern.byTarget.map((row) =>
          h(
            "tr",
            {},
            h("td", {}, row.runtime ?? "none chosen"),
            h("td", {}, row.model ?? "none chosen"),
            h("td", {}, shareWords(row.sessions)),
          ),
        ),
      ),
    ),
  );
}

// Each claim of the label beside the events it cites, read through the audit read.
function examples(params, pattern, events) {
  return h(
    "section",
    { class: "examples", "aria-labelledby": "pattern-examples" },
    h("h3", { id: "pattern-examples" }, `Examples (${pattern.evidence.length})`),
    pattern.evidence.length
      ? h(
          "ol",
          { class: "examples" },
          pattern.evidence.map((claim) =>
            h(
              "li",
              { class: "example", dataset: { session: claim.sessionId } },
              h(
                "div",
                { class: "side-by-side" },
                h(
                  "div",
                  { class: "claim" },
                  h("p", {}, claim.claim),
                  h("p", { class: "meta" }, "Session ", sessionLink(params, claim.sessionId)),
                ),
                h(
                  "div",
                  { class: "evidence" },
                  h("h4", {}, `Cited events (${claim.eventIds.length})`),
                  h(
                    "ol",
                    { class: "events" },
                    claim.eventIds.map((id) =>
                      citedEvent(id, events.get(`${claim.sessionId}/${id}`)),
                    ),
                  ),
                ),
              ),
            ),
          ),
        )
      : h("p", { class: "empty" }, "No example: the pattern has not been labelled yet."),
  );
}

function sessionLink(params, sessionId) {
  const href = route("hypotheses", { project: params.project, sessionId });
  return h("a", { href, class: "session" }, h("code", {}, sessionId));
}

function memberRow(params, member) {
  return h(
    "tr",
    { dataset: { session: member.sessionId } },
    h("th", { scope: "row" }, sessionLink(params, member.sessionId)),
    h("td", {}, member.summary),
    h("td", {}, member.distance === null ? "—" : member.distance.toFixed(3)),
    h("td", {}, day(member.joinedAt)),
  );
}

// The hypotheses' sessions and words, from one read of the agent's hypotheses (the API
// reads no hypothesis by id): those found link to their session's hypotheses.
async function hypothesesOf(project, pattern) {
  if (!pattern.hypothesisIds.length) return new Map();
  try {
    const reply = await get(projectPath(project, "/hypotheses"), {
      agenteAlvo: pattern.agent,
      limit: 200,
    });
    return new Map(reply.body.map((hypothesis) => [hypothesis.id, hypothesis]));
  } catch {
    return new Map();
  }
}

function related(params, pattern, hypotheses) {
  const items = pattern.hypothesisIds.map((id) => {
    const found = hypotheses.get(id);
    const href = found
      ? route("hypotheses", { project: params.project, sessionId: found.sessionId })
      : route("hypotheses", { project: params.project, agenteAlvo: pattern.agent });
    return h(
      "li",
      { dataset: { hypothesis: id } },
      h("a", { href }, h("code", {}, id)),
      found ? [": ", found.hipotese] : null,
    );
  });
  return h(
    "section",
    { class: "related", "aria-labelledby": "pattern-related" },
    h("h3", { id: "pattern-related" }, "Hypotheses and trial"),
    items.length
      ? [
          h("p", {}, "Hypotheses the analyses of its sessions proposed:"),
          h("ul", { class: "hypothesis-links" }, items),
        ]
      : h("p", { class: "empty" }, "No analysis of its sessions proposed a hypothesis."),
  );
}

const operation = (operations, suffix) =>
  operations.find((op) => op.method === "POST" && op.path.endsWith(suffix));

// "ratio 0 (95% interval 0 to 0.41)": treatment's share over control's, with the trial's
// confidence sequence (valid at every look).
function ratioWords(rate) {
  if (rate.empty) return "No ratio fits the arms' counts, so there is no interval.";
  const ratio =
    rate.ratio === null ? "undefined (no session without it shows the pattern)" : rate.ratio;
  const high = rate.high === null ? "no upper end yet" : rate.high;
  return `Risk ratio, given the suggestion against without it: ${ratio} (95% interval ${rate.low ?? 0} to ${high}).`;
}

function armRow(arm, counts, share) {
  return h(
    "tr",
    { dataset: { arm } },
    h("th", { scope: "row" }, arm === "treatment" ? "Given the suggestion" : "Without it"),
    h("td", {}, String(counts.sessions)),
    h("td", {}, String(counts.matching)),
    h("td", {}, percent(share)),
  );
}

// The pattern's trial: the pattern's own rate per arm (ended sessions whose summary joined
// it), the ratio with its interval, the verdict, where it runs and its adoption; for an
// admin, a trial started from an accepted pattern with none running.
function trialSection(params, pattern, trial, operations, reload) {
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  const base = projectPath(params.project, `/patterns/${encodeURIComponent(pattern.id)}/trials`);
  const parts = [h("h3", { id: "pattern-trial" }, "Trial of its suggestion")];
  if (pattern.status === "resolved")
    parts.push(
      h(
        "p",
        { class: "resolved" },
        h("strong", {}, "Resolved: "),
        "a randomised trial of its suggestion read improved.",
      ),
    );
  if (trial) {
    const rate = trial.rate;
    parts.push(
      h(
        "p",
        { class: "trial-verdict", dataset: { verdict: trial.verdict } },
        `${trial.status === "running" ? "Running" : "Stopped"}. ${TRIAL_VERDICTS[trial.verdict]}`,
      ),
      h(
        "div",
        { class: "wide", tabindex: 0, role: "region", "aria-label": "Table of the trial's arms" },
        h(
          "table",
          { class: "rate" },
          h("caption", {}, "Ended sessions of each arm whose summary joined this pattern"),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Arm", "Ended sessions", "Joined the pattern", "Share"].map((name) =>
                h("th", { scope: "col" }, name),
              ),
            ),
          ),
          h(
            "tbody",
            {},
            armRow("treatment", rate.treatment, rate.treatmentShare),
            armRow("control", rate.control, rate.controlShare),
          ),
        ),
      ),
      h("p", { class: "ratio" }, ratioWords(rate)),
      trialState(
        `${base}/${encodeURIComponent(trial.id)}`,
        trial.verdict,
        operation(operations, "/patterns/{patternId}/trials/{trialId}/adopt"),
        outcome,
        reload,
      ),
      h("p", { class: "trial-id" }, "Trial ", copyableId(trial.id)),
    );
  } else {
    parts.push(h("p", { class: "trial" }, "No trial has been started from this pattern."));
  }
  const start = operation(operations, "/patterns/{patternId}/trials");
  if (pattern.status === "accepted" && trial?.status !== "running" && start?.allowed)
    parts.push(startTrial(params.project, pattern.agent, base, outcome, reload));
  parts.push(outcome);
  return h(
    "section",
    { class: "pattern-trial", "aria-labelledby": "pattern-trial", tabindex: -1 },
    ...parts,
  );
}

function refusedSection(params, refused) {
  return h(
    "section",
    { class: "refused", "aria-labelledby": "pattern-refused" },
    h("h3", { id: "pattern-refused" }, `Refused claims (${refused.length})`),
    refused.length
      ? [
          h(
            "p",
            { class: "about" },
            "The model wrote these for the label, and they did not hold when checked against the events they cite. They are kept here with why, and never served as the pattern's label.",
          ),
          h(
            "ol",
            { class: "refused" },
            refused.map((claim) =>
              h(
                "li",
                {},
                h("p", {}, claim.claim === null ? "(not a label)" : h("q", {}, claim.claim)),
                h("p", { class: "reason" }, h("strong", {}, "Not served: "), claim.reason, "."),
                claim.sessionId
                  ? h(
                      "p",
                      { class: "meta" },
                      "Session ",
                      sessionLink(params, claim.sessionId),
                      claim.eventIds?.length
                        ? [
                            ", citing ",
                            claim.eventIds.map((id, i) => [i ? ", " : "", h("code", {}, id)]),
                          ]
                        : null,
                    )
                  : null,
              ),
            ),
          ),
        ]
      : h("p", { class: "empty" }, "None: every claim of its label held."),
  );
}
