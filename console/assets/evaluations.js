// AgentConnect: an agent's frozen evaluations, and one of them as its chain of steps.

import { TENANT_ID, UUID, get } from "./api.js";
import {
  disclosure,
  dl,
  field,
  h,
  idInput,
  input,
  json,
  loading,
  more,
  problem,
  queryForm,
  rawText,
  replace,
  when,
} from "./dom.js";
import { madeBy } from "./provenance.js";

// The org and agent an AgentConnect view is about.
export function agentFields(params) {
  return [
    field("Org", idInput("org", params.org, { required: true, pattern: TENANT_ID })),
    field("Agent", idInput("agent", params.agent, { required: true, pattern: UUID })),
  ];
}

export async function render(main, params, navigate) {
  const form = queryForm("Which agent", agentFields(params), navigate);
  const list = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Evaluations",
  });
  const detail = h("section", {
    class: "detail",
    "aria-live": "polite",
    "aria-label": "Evaluation",
  });
  replace(main, h("h1", {}, "Model evaluations"), form, list, detail);
  if (!params.org || !params.agent) return;
  const base = `/v1/orgs/${encodeURIComponent(params.org)}/agents/${encodeURIComponent(params.agent)}/model-evaluations`;
  await Promise.all([
    showList(list, base, params, navigate),
    params.seq ? showOne(detail, `${base}/${encodeURIComponent(params.seq)}`) : null,
  ]);
}

const TARGET_KEYS = ["runtime", "model", "effort", "permissionMode", "fastMode"];

// The whole target: the keys every target has, in their usual order, then any others.
export function targetText(target) {
  const keys = [...TARGET_KEYS, ...Object.keys(target).filter((key) => !TARGET_KEYS.includes(key))];
  return keys
    .filter((key) => key in target)
    .map((key) => `${key} ${target[key]}`)
    .join(" · ");
}

async function showList(list, base, params, navigate, pageToken) {
  const table = pageToken ? list.querySelector("tbody") : null;
  if (!table) replace(list, loading("evaluations"));
  let page;
  try {
    page = (await get(base, { limit: 20, pageToken })).body;
  } catch (error) {
    return replace(list, problem(error));
  }
  const rows = page.evaluations.map((evaluation) => {
    const open = h("button", { type: "button", class: "link" }, `#${evaluation.seq}`);
    open.addEventListener("click", () =>
      navigate({ org: params.org, agent: params.agent, seq: String(evaluation.seq) }),
    );
    return h(
      "tr",
      { dataset: { seq: String(evaluation.seq) } },
      h("td", {}, open),
      h("td", {}, when(evaluation.at)),
      h("td", {}, evaluation.title),
      h("td", {}, h("span", { class: `badge ${evaluation.outcome}` }, evaluation.outcome)),
      h("td", {}, targetText(evaluation.target)),
    );
  });
  const body =
    table ??
    replace(
      list,
      h(
        "table",
        {},
        h("caption", {}, "Newest first"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Seq", "At", "Session title", "Outcome", "Target"].map((name) =>
              h("th", { scope: "col" }, name),
            ),
          ),
        ),
        h("tbody"),
      ),
    ).querySelector("tbody");
  body.append(...rows);
  if (!pageToken && rows.length === 0)
    list.append(h("p", { class: "empty" }, "No evaluation yet."));
  more(list, page.nextPageToken, (next) => showList(list, base, params, navigate, next));
}

async function showOne(detail, path) {
  replace(detail, loading("the evaluation"));
  try {
    replace(detail, evaluationView((await get(path)).body));
  } catch (error) {
    replace(detail, problem(error));
  }
}

// A raw provider text, indented for reading; the exact bytes are the API's `text`.
function raw(label, clipped) {
  return disclosure(
    `${label}${clipped.truncated ? " (truncated)" : ""}`,
    h(
      "pre",
      { class: "raw", tabindex: 0 },
      clipped.truncated ? clipped.text : rawText(clipped.text),
    ),
  );
}

function answerText(answer) {
  return answer ? `${answer.value} (probability ${answer.probability})` : "no answer";
}

function conditionText(condition) {
  return Object.entries(condition.thresholds)
    .map(([key, at]) => `${key} ≥ ${at}`)
    .join(", ");
}

function stepView(step, link, evaluation) {
  const result = link?.evaluation;
  const held = step.condition !== null;
  return h(
    "li",
    { class: `step${held ? " held" : ""}`, dataset: { stepId: step.stepId } },
    h("h3", {}, `Step ${step.stepId} `, h("small", {}, `decision ${step.decisionId}`)),
    dl([
      ["Question", step.question.instructions],
      [
        "Options",
        step.question.criteria
          ? Object.entries(step.question.criteria)
              .map(([k, v]) => `${k}: ${v}`)
              .join("; ")
          : `${step.question.type}`,
      ],
      ["Answer", result ? answerText(result.answer) : "—"],
      ["Status", result?.status],
      ["Rule that held", held ? conditionText(step.condition) : "none"],
      ["Requested model", `${step.model} (${step.providerId})`],
      ["Answered by", result ? madeBy(step.model, result.model) : "—"],
      [
        "Usage",
        result ? `${result.usage.inputTokens} in / ${result.usage.outputTokens} out tokens` : "—",
      ],
    ]),
    held ? h("p", { class: "chosen" }, `Chose ${targetText(evaluation.target)}`) : null,
    raw("Raw request", step.rawRequest),
    raw("Raw response", step.rawResponse),
  );
}

function evaluationView(evaluation) {
  const links = new Map((evaluation.chain ?? []).map((link) => [link.stepId, link]));
  return h(
    "article",
    { class: "evaluation", dataset: { seq: String(evaluation.seq) } },
    h(
      "h2",
      {},
      `Evaluation #${evaluation.seq}: ${evaluation.title} `,
      h("span", { class: `badge ${evaluation.outcome}` }, evaluation.outcome),
    ),
    dl([
      ["Reason", evaluation.reason],
      ["Target chosen", targetText(evaluation.target)],
      ["Requested model", evaluation.requestedModel],
      ["Answered by", madeBy(evaluation.requestedModel, evaluation.actualModel)],
      ["Latency", `${Math.round(evaluation.latencyMs)} ms`],
      ["Usage", `${evaluation.usage.inputTokens} in / ${evaluation.usage.outputTokens} out tokens`],
      ["Session", evaluation.sessionId],
      ["At", when(evaluation.at)],
    ]),
    evaluation.detailsExpired
      ? h(
          "p",
          { class: "expired" },
          "Details expired: the chain, the input and the raw texts are kept for a limited time.",
        )
      : [
          h("h3", {}, "Chain of steps"),
          h(
            "ol",
            { class: "chain" },
            evaluation.steps.map((step) => stepView(step, links.get(step.stepId), evaluation)),
          ),
          disclosure("Session input", json(evaluation.input)),
          // The deciding step's raw texts are shown under that step; alone only without steps.
          evaluation.steps.length
            ? null
            : [
                raw("Raw request of the deciding step", evaluation.rawRequest),
                raw("Raw response of the deciding step", evaluation.rawResponse),
              ],
        ],
  );
}
