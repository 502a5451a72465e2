// Research: a run's status and, once completed, each statement beside the evidence it
// cites, as that evidence read at the cited revision.

import { UUID, post } from "./api.js";
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
    const evidence = answer ? await citedEvidence(scope, answer) : new Map();
    replace(
      results,
      runSummary(status),
      answer ? answerView(status.message, answer, evidence, status.run) : null,
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

function citation(ref, evidence) {
  const item = evidence.get(keyOf(ref));
  const state = item?.state ?? "removed";
  return h(
    "figure",
    {
      class: `citation ${state}`,
      dataset: { evidenceId: ref.evidence_id, revision: String(ref.revision), state },
    },
    item?.text != null
      ? h("blockquote", {}, item.text)
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

function statement(title, text, details, refs, evidence) {
  return h(
    "article",
    { class: "statement" },
    h("div", { class: "claim" }, h("h3", {}, title), h("p", {}, text), details),
    h(
      "div",
      { class: "evidence", "aria-label": "Cited evidence" },
      refs.map((ref) => citation(ref, evidence)),
    ),
  );
}

function statementOf(title, item, evidence) {
  return statement(
    title,
    item.statement,
    dl([
      ["Basis", item.basis],
      ["Uncertainty", item.uncertainty || null],
    ]),
    item.evidence,
    evidence,
  );
}

function answerView(message, answer, evidence, run) {
  return h(
    "section",
    { class: "answer side-by-side-list" },
    message.question
      ? h("p", { class: "question" }, h("strong", {}, "Question: "), message.question)
      : null,
    statementOf("Answer", answer.answer, evidence),
    answer.findings.map((finding, index) => statementOf(`Finding ${index + 1}`, finding, evidence)),
    answer.sentiment.map((entry) =>
      statement(
        `Sentiment: ${entry.label}`,
        entry.uncertainty || "",
        null,
        [{ evidence_id: entry.evidence_id, revision: entry.revision }],
        evidence,
      ),
    ),
    answer.query_suggestions.map((suggestion) =>
      statement(
        `Query: ${suggestion.query}`,
        suggestion.rationale,
        dl([["Excluded terms", suggestion.excluded_terms.join(", ") || null]]),
        suggestion.evidence,
        evidence,
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
