// Research: a run's status and, once completed, each statement beside the evidence it
// cites, as that evidence read at the cited revision.

import { UUID, get, post } from "./api.js";
import { dl, field, h, idInput, loading, problem, queryForm, replace, when } from "./dom.js";
import { isLocal, madeBy } from "./provenance.js";

const WHY_NOT_CURRENT = {
  source_unavailable: "an evidence item it cites was removed since",
  context_changed: "an evidence item it cites was revised since",
  access_changed: "the person who asked no longer has access",
};

export async function render(main, params, navigate) {
  const form = queryForm(
    "Which run",
    [
      field("Workspace", idInput("workspace", params.workspace, { required: true, pattern: UUID })),
      field(
        "Conversation",
        idInput("conversation", params.conversation, { required: true, pattern: UUID }),
      ),
      field("Run", idInput("run", params.run, { required: true, pattern: UUID })),
    ],
    navigate,
  );
  const results = h("section", { class: "results", "aria-live": "polite", "aria-label": "Run" });
  replace(main, h("h1", {}, "Research run"), form, results);
  if (params.workspace && params.conversation && params.run) await showRun(results, params);
}

const PENDING = new Set(["queued", "processing"]);
const POLL_MS = 1000;

async function showRun(results, params) {
  if (!results.hasChildNodes()) replace(results, loading("the run"));
  const scope = { workspace_id: params.workspace, conversation_id: params.conversation };
  try {
    const status = (await post("/research-api/assistant/status", { ...scope, run_id: params.run }))
      .body;
    const answer = status.message?.answer;
    const [evidence, passages] = answer
      ? await Promise.all([citedEvidence(scope, answer), passagesOf(params)])
      : [new Map(), new Map()];
    replace(
      results,
      runSummary(status),
      answer ? answerView(status.message, answer, { evidence, passages }, status.run) : null,
    );
    // A pending run is read again until it settles, while this view is still shown.
    if (PENDING.has(status.run.status))
      setTimeout(() => results.isConnected && showRun(results, params), POLL_MS);
  } catch (error) {
    replace(results, problem(error));
  }
}

function runSummary(status) {
  const { run, availability } = status;
  const reason = availability.reason;
  const notCurrent = run.status === "unavailable";
  return h(
    "section",
    { class: "run", dataset: { status: run.status } },
    h(
      "h2",
      {},
      `${run.request_kind} run `,
      h("span", { class: `badge ${run.status}` }, run.status),
    ),
    notCurrent
      ? h(
          "p",
          { class: "not-current", role: "status", dataset: { reason: reason ?? "" } },
          h("strong", {}, "No longer current: "),
          `${WHY_NOT_CURRENT[reason] ?? reason} (${reason}). The result is withheld; ask again for a current one.`,
        )
      : null,
    dl([
      ["Run", run.id],
      ["Created", when(run.created_at)],
      ["Kept until", when(run.expires_at)],
      ["Failure", run.failure_code],
      ["Model", run.model_id ? madeBy(run.model_id, run.model_version) : null],
      // The contract names the processor the API is built for; beside a local answer it
      // would say Google Gemini made what it did not.
      ["Processor", isLocal(run.model_version) ? undefined : availability.processor],
    ]),
  );
}

function refsOf(answer) {
  return [
    ...answer.answer.evidence,
    ...answer.findings.flatMap((finding) => finding.evidence),
    ...answer.sentiment.map(({ evidence_id, revision }) => ({ evidence_id, revision })),
    ...answer.query_suggestions.flatMap((suggestion) => suggestion.evidence),
  ];
}

const keyOf = (ref) => `${ref.evidence_id}@${ref.revision}`;

async function citedEvidence(scope, answer) {
  const unique = new Map(refsOf(answer).map((ref) => [keyOf(ref), ref]));
  const refs = [...unique.values()];
  const found = new Map();
  for (let start = 0; start < refs.length; start += 100) {
    const reply = await post("/research-api/evidence/read", {
      ...scope,
      items: refs.slice(start, start + 100),
    });
    reply.body.items.forEach((item) => found.set(keyOf(item), item));
  }
  return found;
}

// The verified passage of each citation, by where it stands in the answer.
async function passagesOf(params) {
  const path = `/research-api/runs/${encodeURIComponent(params.run)}/citations`;
  const reply = await get(path, { workspace_id: params.workspace });
  const found = new Map();
  for (const statement of reply.body.statements) {
    for (const cited of statement.citations) found.set(cited.path, cited);
  }
  return found;
}

// The item's text with the passage the statement rests on marked.
function marked(text, passage) {
  if (!passage || passage.end > text.length) return h("blockquote", {}, text);
  return h(
    "blockquote",
    {},
    text.slice(0, passage.start),
    h("mark", { class: "passage" }, text.slice(passage.start, passage.end)),
    text.slice(passage.end),
  );
}

function citation({ ref, path }, { evidence, passages }) {
  const item = evidence.get(keyOf(ref));
  const state = item?.state ?? "removed";
  return h(
    "figure",
    {
      class: `citation ${state}`,
      dataset: { evidenceId: ref.evidence_id, revision: String(ref.revision), state, path },
    },
    item?.text != null
      ? marked(item.text, passages.get(path))
      : h(
          "p",
          { class: "unreadable" },
          state === "revised"
            ? `Revised since (now revision ${item.current_revision}); the cited text is no longer kept.`
            : "Removed since.",
        ),
    h(
      "figcaption",
      {},
      h("code", {}, ref.evidence_id),
      ` · revision ${ref.revision}`,
      item?.source?.title ? ` · ${item.source.title}` : "",
    ),
  );
}

function statement(title, text, details, cited, found) {
  return h(
    "article",
    { class: "statement" },
    h("div", { class: "claim" }, h("h3", {}, title), h("p", {}, text), details),
    h(
      "div",
      { class: "evidence", "aria-label": "Cited evidence" },
      cited.map((each) => citation(each, found)),
    ),
  );
}

// Each citation of a statement with where it stands (`findings[0].evidence[1]`).
const citedAt = (path, refs) =>
  refs.map((ref, index) => ({ ref, path: `${path}.evidence[${index}]` }));

function statementOf(title, path, item, found) {
  return statement(
    title,
    item.statement,
    dl([
      ["Basis", item.basis],
      ["Uncertainty", item.uncertainty || null],
    ]),
    citedAt(path, item.evidence),
    found,
  );
}

function answerView(message, answer, found, run) {
  return h(
    "section",
    { class: "answer side-by-side-list" },
    message.question
      ? h("p", { class: "question" }, h("strong", {}, "Question: "), message.question)
      : null,
    statementOf("Answer", "answer", answer.answer, found),
    answer.findings.map((finding, index) =>
      statementOf(`Finding ${index + 1}`, `findings[${index}]`, finding, found),
    ),
    answer.sentiment.map((entry, index) =>
      statement(
        `Sentiment: ${entry.label}`,
        entry.uncertainty || "",
        null,
        [
          {
            ref: { evidence_id: entry.evidence_id, revision: entry.revision },
            path: `sentiment[${index}]`,
          },
        ],
        found,
      ),
    ),
    answer.query_suggestions.map((suggestion, index) =>
      statement(
        `Query: ${suggestion.query}`,
        suggestion.rationale,
        dl([["Excluded terms", suggestion.excluded_terms.join(", ") || null]]),
        citedAt(`query_suggestions[${index}]`, suggestion.evidence),
        found,
      ),
    ),
    answer.limitations.length
      ? h(
          "section",
          { class: "limitations" },
          h("h3", {}, "Limitations"),
          h(
            "ul",
            {},
            answer.limitations.map((text) => h("li", {}, text)),
          ),
        )
      : null,
    h(
      "p",
      { class: "meta" },
      "Answered by ",
      madeBy(run.model_id, run.model_version),
      ` · method ${answer.method_version}`,
      answer.quantitative_claims ? " · makes quantitative claims" : "",
    ),
  );
}
