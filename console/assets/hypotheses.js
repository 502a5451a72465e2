// Psychologist: hypotheses beside the events they cite, and the decisions on them.

import { TENANT_ID, call, get, post } from "./api.js";
import { agentNamed, homeData, nameOf } from "./home.js";
import { citedEvent, citedEvents } from "./audit.js";
import { MIN_DECIDED } from "./calibration.js";
import { madeBy } from "./provenance.js";
import {
  copyableId,
  disclosure,
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
  ["proposed", "Proposed"],
  ["accepted", "Accepted"],
  ["dismissed", "Dismissed"],
];

export async function render(main, params, navigate) {
  const form = queryForm(
    "Which hypotheses",
    [
      field("Project", idInput("project", params.project, { required: true, pattern: TENANT_ID })),
      field("Status", select("status", params.status, STATUSES)),
      field("Agent", input("agenteAlvo", params.agenteAlvo)),
      field("Session", idInput("sessionId", params.sessionId)),
      field("Per page", input("limit", params.limit || "20", { type: "number", min: 1, max: 200 })),
    ],
    navigate,
  );
  const results = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Hypotheses",
  });
  replace(main, h("h1", {}, "Hypotheses"), form, results);
  if (params.project) await showPage(results, params);
}

function projectPath(project, suffix = "") {
  return `/projects/${encodeURIComponent(project)}${suffix}`;
}

async function showPage(results, params, pageToken) {
  const list = pageToken ? results.querySelector("ol.hypotheses") : null;
  if (!list) replace(results, loading("hypotheses"));
  const query = {
    status: params.status,
    agenteAlvo: params.agenteAlvo,
    sessionId: params.sessionId,
    limit: params.limit,
    pageToken,
  };
  let access, page;
  try {
    [access, page] = await Promise.all([
      get(projectPath(params.project, "/access")),
      get(projectPath(params.project, "/hypotheses"), query),
    ]);
  } catch (error) {
    return replace(results, problem(error));
  }
  const decide = access.body.operations.find(
    (op) => op.method === "POST" && op.path.endsWith("/decision"),
  );
  const adopt = access.body.operations.find(
    (op) =>
      op.method === "POST" && op.path.endsWith("/hypotheses/{hypothesisId}/trials/{trialId}/adopt"),
  );
  const [events, models, latest, effects, calibrations] = await Promise.all([
    citedEventsOf(params.project, page.body),
    modelsOf(params.project, page.body),
    latestDecisions(params.project, page.body),
    effectsOf(params.project, page.body),
    calibrationsOf(params.project, page.body),
  ]);
  const target =
    list ??
    replace(
      results,
      h("p", { class: "role" }, roleLine(access.body, decide)),
      h("ol", { class: "hypotheses" }),
    ).querySelector("ol.hypotheses");
  if (!list && page.body.length === 0)
    results.append(h("p", { class: "empty" }, "No hypotheses match."));
  for (const hypothesis of page.body) {
    target.append(
      h(
        "li",
        {},
        card(
          params,
          hypothesis,
          { events, models, latest, effects, calibrations, adopt },
          decide,
          () => showPage(results, params),
        ),
      ),
    );
  }
  // Opened from elsewhere (an instructions version's link): the card named is marked.
  const named = params.hypothesis
    ? target.querySelector(`article.hypothesis[data-id="${CSS.escape(params.hypothesis)}"]`)
    : null;
  if (named) {
    named.classList.add("target");
    named.setAttribute("aria-current", "true");
    named.scrollIntoView({ block: "start" });
  }
  more(results, page.headers.get("X-Next-Page-Token"), (next) => showPage(results, params, next));
}

function roleLine(access, decide) {
  const role = `Signed in as ${access.userId} (${access.role}).`;
  return decide?.allowed
    ? `${role} You may accept or dismiss.`
    : `${role} You may read, not decide. ${decide?.reason ?? "The API offers no decision."}`;
}

// The cited events of a page, read through the audit endpoint (`audit.js`).
function citedEventsOf(project, hypotheses) {
  return citedEvents(
    project,
    hypotheses.map((hypothesis) => ({
      sessionId: hypothesis.sessionId,
      eventIds: hypothesis.evidenceEventIds,
    })),
  );
}

// The model behind each hypothesis, from the analysis that proposed it: one read per
// analysis on the page. An analysis record is kept 24 hours; after that the model is unknown.
async function modelsOf(project, hypotheses) {
  const ids = [...new Set(hypotheses.map((hypothesis) => hypothesis.analysisId))];
  const reads = ids.map((id) =>
    get(projectPath(project, `/analyses/${encodeURIComponent(id)}`)).then(
      (reply) => [id, { calls: reply.body.calls }],
      (error) => [id, { error }],
    ),
  );
  return new Map(await Promise.all(reads));
}

function provenance(found) {
  if (!found || found.error?.status === 404)
    return "not kept: the analysis that proposed it is kept 24 hours";
  if (found.error) return problem(found.error);
  const versions = [...new Set(found.calls.map((call) => call.modelVersion).filter(Boolean))];
  if (versions.length === 0) return madeBy(null, null);
  return versions.map((version, index) => [index ? ", " : "", madeBy(version, version)]);
}

function decisionsPath(project, hypothesis) {
  return projectPath(project, `/hypotheses/${encodeURIComponent(hypothesis.id)}/decisions`);
}

// Each decided hypothesis's decision history, for the latest decision's reason in its card
// and for its "Decision history": one read per decided card.
async function latestDecisions(project, hypotheses) {
  const decided = hypotheses.filter((hypothesis) => hypothesis.status !== "proposed");
  const reads = decided.map((hypothesis) =>
    get(decisionsPath(project, hypothesis)).then(
      (reply) => [hypothesis.id, { decisions: reply.body.decisions }],
      (error) => [hypothesis.id, { error }],
    ),
  );
  return new Map(await Promise.all(reads));
}

// The measured effect of each accepted hypothesis on the page: one read per accepted card.
async function effectsOf(project, hypotheses) {
  const accepted = hypotheses.filter((hypothesis) => hypothesis.status === "accepted");
  const reads = accepted.map((hypothesis) =>
    get(projectPath(project, `/hypotheses/${encodeURIComponent(hypothesis.id)}/effect`)).then(
      (reply) => [hypothesis.id, { effect: reply.body }],
      (error) => [hypothesis.id, { error }],
    ),
  );
  return new Map(await Promise.all(reads));
}

// Each agent's calibration (the last 90 days), for what people made of its hypotheses at
// each confidence: one read per agent on the page.
async function calibrationsOf(project, hypotheses) {
  const agents = [...new Set(hypotheses.map((hypothesis) => hypothesis.agenteAlvo))];
  const reads = agents.map((agent) =>
    get(projectPath(project, "/calibration"), { agenteAlvo: agent }).then(
      (reply) => [agent, { bands: reply.body.bands }],
      (error) => [agent, { error }],
    ),
  );
  return new Map(await Promise.all(reads));
}

const inBand = (percent, band) =>
  band.fromPercent <= percent && (percent < band.toPercent || band.toPercent === 100);

// Beside the model's self-reported confidence, what people made of that agent's hypotheses
// at the same confidence.
function acceptedAtConfidence(hypothesis, found) {
  if (!found) return null;
  if (found.error) return problem(found.error);
  const band = found.bands.find((each) => inBand(hypothesis.confiancaPercent, each));
  const decided = band.accepted + band.dismissed;
  const range = `${band.fromPercent}–${band.toPercent}%`;
  const text =
    decided === 0
      ? `No hypothesis of ${hypothesis.agenteAlvo} at this confidence (${range}) has been decided yet.`
      : `People accepted ${band.accepted} of ${decided} of ${hypothesis.agenteAlvo}'s hypotheses at this confidence (${range})` +
        (decided < MIN_DECIDED ? ": too few to tell." : ".");
  return h("p", { class: "calibrated", dataset: { band: range } }, text);
}

const percent = (share) => (share === null ? "–" : `${Math.round(share * 100)}%`);

const KINDS = {
  task_reopened: "a task reopened",
  tool_error_repeated: "the same tool error repeated",
  last_events_before_abnormal_end: "an abnormal end after the agent's events",
};

function verdictWords(effect, compared, what) {
  const ratio = compared.ratio === null ? "undefined" : compared.ratio;
  const high = compared.high === null ? "no upper end" : compared.high;
  const interval = `ratio ${ratio}, exact 95% interval ${compared.low}–${high}`;
  const before = `${effect.before.sessions} before`;
  const after = `${effect.after.sessions} after`;
  return {
    improved: `Improved: a smaller share of sessions showed ${what} after the decision (${interval}).`,
    worse: `Worse: a larger share of sessions showed ${what} after the decision (${interval}).`,
    no_clear_change: `No clear change in ${what} (${interval}: the interval includes 1).`,
    too_few_sessions: `Too few sessions to tell (${before}, ${after}); each window needs ${effect.minimumSessions}.`,
    withheld: `No verdict: no ratio fits the windows' counts of ${what}, so there is no interval.`,
  }[effect.verdict];
}

function windowRow(name, window, effect) {
  return h(
    "tr",
    { dataset: { window: name } },
    h("th", { scope: "row" }, name),
    h("td", {}, when(window.start), " to ", when(window.end), window.open ? " (still open)" : ""),
    h("td", {}, String(window.sessions)),
    effect.signals ? h("td", {}, `${window.withSignals} showing the pattern`) : null,
    h("td", {}, `${window.abnormalEnds} ended abnormally`),
  );
}

// Beside an accepted hypothesis: the agent's sessions before and after the decision.
function effectPanel(hypothesis, found) {
  if (hypothesis.status !== "accepted" || !found) return null;
  if (found.error)
    return h("section", { class: "effect", "aria-label": "Effect" }, problem(found.error));
  const { effect } = found;
  const kinds = effect.signalKinds.map((kind) => KINDS[kind] ?? kind).join(" or ");
  const compared = effect.signals ?? effect.abnormalEnds;
  const what = effect.signals ? kinds : "abnormal ends";
  const which = effect.signals ? `showing ${kinds}` : "that ended abnormally";
  const shares = `Sessions ${which}: ${percent(compared.shareBefore)} before, ${percent(compared.shareAfter)} after.`;
  const columns = ["Window", "Ended", "Sessions", effect.signals ? "Pattern" : null, "Abnormal"];
  return h(
    "section",
    { class: "effect", "aria-label": "Effect", dataset: { verdict: effect.verdict } },
    h("h3", {}, "Did it help?"),
    h("p", { class: "verdict" }, verdictWords(effect, compared, what)),
    h("p", { class: "shares" }, shares),
    h(
      "table",
      { class: "windows" },
      h(
        "caption",
        {},
        `${effect.agenteAlvo}'s sessions, ${effect.windowDays} days each side of the decision`,
      ),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          columns.filter(Boolean).map((name) => h("th", { scope: "col" }, name)),
        ),
      ),
      h(
        "tbody",
        {},
        windowRow("Before", effect.before, effect),
        windowRow("After", effect.after, effect),
      ),
    ),
    h(
      "p",
      { class: "caveat" },
      "An association over time, not proof: anything else that changed in these weeks moves it too.",
    ),
  );
}

export const TRIAL_VERDICTS = {
  improved: "The change helped: sessions given it show the pattern less, beyond chance.",
  worse: "The change hurt: sessions given it show the pattern more, beyond chance.",
  no_clear_change: "No clear difference between the arms yet.",
  too_few_sessions: "Too few sessions in an arm to tell yet.",
  withheld: "No verdict: the read cannot be trusted as it stands.",
};

const NOT_NEEDED = {
  no_control_sessions: "no session without the change has ended yet",
  pattern_not_seen_in_control: "no session without the change has shown the pattern yet",
  beyond_reach: "a change that small is beyond what the trial can tell at any size",
};

// A ratio treatment/control with its exact 95% confidence sequence, valid after every
// session: a high end of null means none yet.
function trialInterval(read, trial) {
  if (read.empty) return "no ratio fits the arms' counts, so there is no interval";
  const why =
    trial.arms.treatment.sessions === 0
      ? "no session given the change has ended yet"
      : "no session without it shows the pattern";
  const ratio = read.ratio === null ? `undefined (${why})` : read.ratio;
  const high = read.high === null ? "no upper end yet" : read.high;
  return `risk ratio ${ratio}, 95% interval ${read.low} to ${high}`;
}

const KIND_NAMES = { abnormal_end: "ending abnormally", ...KINDS };

// The sessions needed, in plain words: how many sessions in all give the trial an 80% chance
// of telling a change that cuts the pattern by the meaningful ratio.
function neededWords(trial) {
  const cut = Math.round((1 - trial.meaningfulRatio) * 100);
  if (trial.sessionsNeeded === null)
    return ` How many sessions it needs to tell a change that cuts the pattern by ${cut}% cannot be said yet: ${NOT_NEEDED[trial.sessionsNeededReason] ?? trial.sessionsNeededReason}.`;
  const sessions = trial.arms.treatment.sessions + trial.arms.control.sessions;
  const still = Math.max(trial.sessionsNeeded - sessions, 0);
  return ` With about ${trial.sessionsNeeded} sessions in all, the trial has an 80% chance of telling a change that cuts the pattern by ${cut}% or more: ${still} still needed.`;
}

// What keeps the read honest: arms that lost sessions unequally, and the guardrail's
// one-sided test for harm.
function trialWarnings(trial) {
  const warnings = [];
  if (trial.sampleRatioMismatch.flagged)
    warnings.push(
      "The arms lost different shares of their sessions, beyond chance: the verdict is withheld until that is explained.",
    );
  if (trial.guardrail.harmFound)
    warnings.push(
      "Harm found: sessions given the change show the pattern more, beyond chance (the guardrail's one-sided test).",
    );
  return warnings.map((text) => h("p", { class: "problem trial-warning", role: "alert" }, text));
}

// "dev-api in Acme", ids beside the names for copying.
function agentInOrg({ org, agent }) {
  return [
    h("strong", {}, agent.name ?? agent.id),
    " in ",
    h("strong", {}, org.name ?? org.id),
    " (agent ",
    copyableId(agent.id),
    ", org ",
    copyableId(org.id),
    ")",
  ];
}

// Who stopped a trial and why, said plainly: a person, the guardrail (its verdict read
// worse) or its own autoAdopt.
export function stoppedWords(trial) {
  if (trial.status !== "stopped" || !trial.stoppedBy) return null;
  const why = trial.stopReason ? `: ${trial.stopReason}` : ".";
  if (trial.stoppedBy === "guardrail") {
    // The guardrail's reason names it already ("Stopped by the guardrail: ...").
    const said = trial.stopReason?.startsWith("Stopped by the guardrail")
      ? trial.stopReason
      : `Stopped by the guardrail${why}`;
    return h("p", { class: "stopped-by guardrail", role: "alert" }, said);
  }
  if (trial.stoppedBy === "autoAdopt")
    return h(
      "p",
      { class: "stopped-by" },
      `Adopted by itself (it was started with autoAdopt)${why}`,
    );
  return h("p", { class: "stopped-by" }, `Stopped by ${trial.stoppedBy}${why}`);
}

export const instructionsRoute = (orgId, agentId) =>
  `#/instructions?${new URLSearchParams({ org: orgId, agent: agentId })}`;

// "Adopted as version 3", linking to the agent's instructions; or, for an admin of the
// project and of the org while the verdict reads improved, the button that adopts it.
export async function adoption(trial, verdict, adopt, path, outcome, reload) {
  if (trial.adoptedAs !== null && trial.adoptedAs !== undefined)
    return h(
      "p",
      { class: "adopted" },
      "Adopted as ",
      h("a", { href: instructionsRoute(trial.orgId, trial.agentId) }, `version ${trial.adoptedAs}`),
      " of the agent's instructions.",
    );
  if (verdict !== "improved" || !adopt?.allowed) return null;
  const { org } = await agentNamed(trial.orgId, trial.agentId);
  if (!["admin", "owner"].includes(org.role)) return null;
  const button = h("button", { type: "button", class: "adopt" }, "Adopt");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await post(`${path}/adopt`, {});
      await reload();
    } catch (error) {
      button.disabled = false;
      replace(outcome, problem(error));
    }
  });
  return h(
    "div",
    { class: "adopt" },
    button,
    h(
      "span",
      { class: "hint" },
      " Makes the next version of the agent's instructions: the current text, then this suggestion, naming the trial. The trial stops.",
    ),
  );
}

// Where a trial runs (its org and agent, by name where the home read has them), who stopped
// it and why, and its adoption: from the trial's own read at `path` (a hypothesis's or a
// pattern's trial).
export function trialState(path, verdict, adopt, outcome, reload) {
  const box = h("div", { class: "trial-state" });
  get(path)
    .then(async ({ body }) => {
      replace(
        box,
        h(
          "p",
          { class: "trial-where" },
          "In ",
          agentInOrg(await agentNamed(body.orgId, body.agentId)),
          ".",
        ),
        body.autoAdopt && body.status === "running"
          ? h(
              "p",
              { class: "auto-adopt" },
              "It adopts itself the first time its verdict reads improved.",
            )
          : null,
        stoppedWords(body),
        await adoption(body, verdict, adopt, path, outcome, reload),
        afterAdoptionWords(body.afterAdoption),
      );
    })
    .catch((error) => replace(box, problem(error)));
  return box;
}

// Sessions of the agent under the version before the adoption against the adopted one, on
// the trial's basis: an association over time, said so, beside the randomised result.
function afterAdoptionWords(after) {
  if (!after) return null;
  const side = ({ version, sessions, showing, share }) =>
    `${version === null ? "no instructions" : `version ${version}`}: ${showing} of ${sessions} (${percent(share)})`;
  const ratio = after.ratio === null ? "undefined" : after.ratio;
  const high = after.high === null ? "no upper end" : after.high;
  return h(
    "p",
    { class: "after-adoption" },
    `Since the adoption, every session of the agent: ${side(after.before)} before, ` +
      `${side(after.after)} after; ratio ${ratio} (95% interval ${after.low ?? 0} to ${high}). ` +
      "An association over time, not the trial's result.",
  );
}

// How one who may decide starts a trial (of a hypothesis's or a pattern's suggestion): by
// picking an agent linked to this project under the agent name its sessions are logged as,
// and whether it adopts itself; an admin of an org links one of its agents here first.
let startForms = 0;

export function startTrial(project, agentName, path, outcome, reload) {
  const box = h("div", { class: "start-trial" }, loading("the agents linked to this project"));
  homeData()
    .then((home) => {
      const orgs = home.tenants.filter((tenant) => tenant.kind === "org");
      const pairs = orgs.flatMap((org) => (org.agents ?? []).map((agent) => ({ org, agent })));
      const linked = pairs.filter(
        ({ agent }) => agent.projectId === project && agent.name === agentName,
      );
      const linkable = pairs.filter(
        (pair) => !linked.includes(pair) && ["admin", "owner"].includes(pair.org.role),
      );
      const parts = [];
      if (linked.length) {
        startForms += 1;
        const agent = select(
          "agent",
          "",
          linked.map(({ org, agent }) => [
            `${org.id}/${agent.id}`,
            `${nameOf(agent)} in ${nameOf(org)}`,
          ]),
        );
        agent.id = `trial-agent-${startForms}`;
        const autoAdopt = h("input", {
          type: "checkbox",
          name: "autoAdopt",
          id: `auto-adopt-${startForms}`,
        });
        const form = h(
          "form",
          { class: "start-trial", "aria-label": "Start a trial" },
          field("Agent", agent, `Agents whose sessions are logged here as ${agentName}.`),
          h(
            "div",
            { class: "check" },
            autoAdopt,
            h(
              "label",
              { for: autoAdopt.id },
              "Adopt by itself into the instructions the first time its verdict reads improved",
            ),
          ),
          h("button", { type: "submit" }, "Start a trial"),
        );
        form.addEventListener("submit", async (event) => {
          event.preventDefault();
          const [orgId, agentId] = agent.value.split("/");
          const body = { orgId, agentId };
          if (autoAdopt.checked) body.autoAdopt = true;
          try {
            await post(path, body);
            homeData(true);
            reload();
          } catch (error) {
            replace(outcome, problem(error));
          }
        });
        parts.push(form);
      } else {
        parts.push(
          h(
            "p",
            { class: "no-link" },
            `No agent of an org you can see logs its sessions to this project as ${agentName}: a trial needs one.`,
          ),
        );
      }
      if (linkable.length) {
        const agent = select(
          "link",
          "",
          linkable.map(({ org, agent }) => [
            `${org.id}/${agent.id}`,
            `${nameOf(agent)} in ${nameOf(org)}${agent.projectId ? " (linked elsewhere now)" : ""}`,
          ]),
        );
        agent.id = `link-agent-${(startForms += 1)}`;
        const form = h(
          "form",
          { class: "link-agent", "aria-label": "Link an agent to this project" },
          field(
            "Link an agent",
            agent,
            `Its sessions are then logged to this project as ${agentName} (its outcome source).`,
          ),
          h("button", { type: "submit", class: "secondary" }, "Link"),
        );
        form.addEventListener("submit", async (event) => {
          event.preventDefault();
          const [orgId, agentId] = agent.value.split("/");
          const source = `/v1/orgs/${encodeURIComponent(orgId)}/agents/${encodeURIComponent(agentId)}/outcome-source`;
          try {
            await call("PUT", source, {
              body: { projectId: project, agent: agentName },
            });
            await homeData(true);
            reload();
          } catch (error) {
            replace(outcome, problem(error));
          }
        });
        parts.push(form);
      }
      replace(box, ...parts);
    })
    .catch((error) => replace(box, problem(error)));
  return box;
}

// A randomised trial of an accepted card's suggestion: where it runs, its arms and
// verdict, with stop and start for those who may decide.
function trialPanel(params, hypothesis, found, decide, adopt, reload) {
  if (hypothesis.status !== "accepted" || !found || found.error) return null;
  const trial = found.effect.randomized;
  const path = projectPath(
    params.project,
    `/hypotheses/${encodeURIComponent(hypothesis.id)}/trials`,
  );
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  const parts = [h("h3", {}, "Randomised trial")];
  if (trial) {
    parts.push(
      h(
        "p",
        { class: "trial-verdict" },
        `${trial.status === "running" ? "Running" : "Stopped"}. ${TRIAL_VERDICTS[trial.verdict]}${neededWords(trial)}`,
      ),
      ...trialWarnings(trial),
      trialState(
        projectPath(
          params.project,
          `/hypotheses/${encodeURIComponent(hypothesis.id)}/trials/${encodeURIComponent(trial.trialId)}`,
        ),
        trial.verdict,
        adopt,
        outcome,
        reload,
      ),
      h(
        "ul",
        { class: "trial-intervals" },
        trial.basis.map((kind) => {
          const read = kind === "abnormal_end" ? trial.abnormalEnds : trial.signalKinds[kind];
          return h(
            "li",
            { dataset: { kind } },
            `${KIND_NAMES[kind] ?? kind}: ${trialInterval(read, trial)}`,
          );
        }),
      ),
      h(
        "table",
        { class: "arms" },
        h(
          "caption",
          {},
          `Arms of the trial (${percent(trial.share)} of sessions given the change)`,
        ),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Arm", "Sessions", "Lost", "Ended abnormally"].map((name) =>
              h("th", { scope: "col" }, name),
            ),
          ),
        ),
        h(
          "tbody",
          {},
          ["treatment", "control"].map((arm) =>
            h(
              "tr",
              { dataset: { arm } },
              h("th", { scope: "row" }, arm === "treatment" ? "Given the change" : "Without it"),
              h("td", {}, trial.arms[arm].sessions),
              h("td", {}, trial.arms[arm].lost),
              h("td", {}, percent(trial.arms[arm].abnormalShare)),
            ),
          ),
        ),
      ),
      h("p", { class: "trial-id" }, "Trial ", copyableId(trial.trialId)),
    );
  }
  if (decide?.allowed && trial?.status === "running") {
    const stop = h("button", { type: "button", class: "secondary" }, "Stop the trial");
    stop.addEventListener("click", async () => {
      try {
        await post(`${path}/${encodeURIComponent(trial.trialId)}/stop`, {});
        reload();
      } catch (error) {
        replace(outcome, problem(error));
      }
    });
    parts.push(stop);
  } else if (decide?.allowed) {
    parts.push(startTrial(params.project, hypothesis.agenteAlvo, path, outcome, reload));
  }
  parts.push(outcome);
  return h("section", { class: "trial", "aria-label": "Randomised trial" }, ...parts);
}

function card(
  params,
  hypothesis,
  { events, models, latest, effects, calibrations, adopt },
  decide,
  reload,
) {
  const cited = hypothesis.evidenceEventIds.map((id) =>
    citedEvent(id, events.get(`${hypothesis.sessionId}/${id}`)),
  );
  const ending = hypothesis.terminationAnalysis;
  const termination = ending
    ? h(
        "section",
        { class: "termination" },
        h("h3", {}, "Termination analysis"),
        h("p", {}, ending.analise),
        dl([
          ["Session state", ending.estadoDaSessao],
          ["Cause", ending.causa],
        ]),
      )
    : null;
  return h(
    "article",
    { class: "hypothesis", dataset: { id: hypothesis.id, status: hypothesis.status } },
    h(
      "header",
      {},
      h(
        "h2",
        {},
        hypothesis.hipotese,
        " ",
        h("span", { class: `badge ${hypothesis.status}` }, hypothesis.status),
      ),
      h(
        "p",
        { class: "meta" },
        `Agent ${hypothesis.agenteAlvo} · confidence ${hypothesis.confiancaPercent}% (the model's own) · session `,
        h("code", {}, hypothesis.sessionId),
        " · ",
        when(hypothesis.createdAt),
      ),
      acceptedAtConfidence(hypothesis, calibrations.get(hypothesis.agenteAlvo)),
    ),
    h(
      "div",
      { class: "side-by-side" },
      h(
        "section",
        { class: "claim", "aria-label": "What the model concluded" },
        dl([
          ["Observation", hypothesis.observacao],
          ["Suggested change", hypothesis.sugestao],
          ["Proposed by", provenance(models.get(hypothesis.analysisId))],
        ]),
        termination,
      ),
      h(
        "section",
        { class: "evidence", "aria-label": "Cited events" },
        h("h3", {}, `Cited events (${cited.length})`),
        h("ol", { class: "events" }, cited),
      ),
    ),
    decided(hypothesis, latest.get(hypothesis.id)),
    effectPanel(hypothesis, effects.get(hypothesis.id)),
    trialPanel(params, hypothesis, effects.get(hypothesis.id), decide, adopt, reload),
    decision(params, hypothesis, decide, reload),
    history(params, hypothesis, latest.get(hypothesis.id)?.decisions),
  );
}

const VERB = { accepted: "Accepted", dismissed: "Dismissed" };

// A decided hypothesis says what was decided, by whom, when and why, in the card itself.
function decided(hypothesis, found) {
  if (hypothesis.status === "proposed") return null;
  const reason = found?.decisions?.[0]?.reason;
  return h(
    "section",
    { class: `decided ${hypothesis.status}`, "aria-label": "Decision" },
    h(
      "p",
      {},
      h("strong", {}, VERB[hypothesis.status] ?? hypothesis.status),
      ` by ${hypothesis.decidedBy?.userId ?? "unknown"} · `,
      when(hypothesis.decidedAt),
    ),
    found?.error
      ? problem(found.error)
      : h("p", { class: "reason" }, reason ? h("q", {}, reason) : "No reason was given."),
  );
}

function decision(params, hypothesis, decide, reload) {
  if (!decide?.allowed) {
    return h(
      "p",
      { class: "cannot-decide" },
      `You cannot decide on this hypothesis. ${decide?.reason ?? "The API offers no decision."}`,
    );
  }
  if (hypothesis.status === "proposed") return decideForm(params, hypothesis, reload);
  // Changing a decision is one step further away: the form appears only once asked for.
  const change = h(
    "button",
    { type: "button", class: "secondary change", "aria-expanded": "false" },
    "Change the decision",
  );
  const holder = h("div", { class: "change-decision" }, change);
  change.addEventListener("click", () => {
    const keep = h("button", { type: "button", class: "secondary" }, "Keep the decision");
    const form = decideForm(params, hypothesis, reload, keep);
    keep.addEventListener("click", () => {
      replace(holder, change);
      change.focus();
    });
    replace(holder, form);
    form.querySelector("textarea").focus();
  });
  return holder;
}

function decideForm(params, hypothesis, reload, keep = null) {
  const reason = h("textarea", {
    name: "reason",
    id: `reason-${hypothesis.id}`,
    maxlength: 1000,
    rows: 2,
  });
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  const changing = keep !== null;
  const choices = [
    ["accepted", changing ? "Accept instead" : "Accept"],
    ["dismissed", changing ? "Dismiss instead" : "Dismiss"],
  ].filter(([status]) => status !== hypothesis.status);
  const form = h(
    "form",
    { class: "decide", "aria-label": `Decide on hypothesis ${hypothesis.id}` },
    changing
      ? h(
          "p",
          { class: "confirm", role: "status" },
          `This hypothesis is ${hypothesis.status}. A new decision replaces it; the earlier one stays in the history.`,
        )
      : null,
    h("div", { class: "field" }, h("label", { for: reason.id }, "Reason (optional)"), reason),
    choices.map(([status, label], index) => [
      index ? " " : "",
      h(
        "button",
        { type: "submit", name: "status", value: status, class: index ? "secondary" : null },
        label,
      ),
    ]),
    keep ? [" ", keep] : null,
    outcome,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { status: event.submitter.value };
    if (reason.value.trim()) body.reason = reason.value.trim();
    try {
      const path = `/projects/${encodeURIComponent(params.project)}/hypotheses/${encodeURIComponent(hypothesis.id)}/decision`;
      await post(path, body);
      await reload();
    } catch (error) {
      replace(outcome, problem(error));
    }
  });
  return form;
}

function decisionRows(decisions) {
  const rows = decisions.map((d) =>
    h(
      "li",
      {},
      `${d.previousStatus} → ${d.status} by ${d.decidedBy.userId} · `,
      when(d.decidedAt),
      d.reason ? h("q", {}, d.reason) : null,
    ),
  );
  return rows.length ? h("ol", { class: "decisions" }, rows) : h("p", {}, "No decision yet.");
}

// The history read with the page when the card is decided, else read when opened.
function history(params, hypothesis, known) {
  const body = h("div", { class: "history-body" });
  const details = disclosure("Decision history", body);
  details.classList.add("history");
  details.addEventListener("toggle", async () => {
    if (!details.open || body.dataset.loaded) return;
    body.dataset.loaded = "yes";
    if (known) return replace(body, decisionRows(known));
    replace(body, loading("the decision history"));
    try {
      const reply = await get(decisionsPath(params.project, hypothesis));
      replace(body, decisionRows(reply.body.decisions));
    } catch (error) {
      delete body.dataset.loaded;
      replace(body, problem(error));
    }
  });
  return details;
}
