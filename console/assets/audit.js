// Cited events, read through the events audit read (GET .../sessions/{sessionId}/events?ids=)
// and shown as they are stored: a hypothesis's and a pattern's claims beside what they cite.

import { get } from "./api.js";
import { h, json, problem, when } from "./dom.js";

const AUDIT_BATCH = 100;

// The events `cites` name ([{sessionId, eventIds}]): one call per session and hundred ids.
// Keyed `${sessionId}/${eventId}`; missing means expired or never stored; a failed read is
// kept per event, to be shown in its place.
export async function citedEvents(project, cites) {
  const bySession = new Map();
  for (const { sessionId, eventIds } of cites) {
    const ids = bySession.get(sessionId) ?? new Set();
    eventIds.forEach((id) => ids.add(id));
    bySession.set(sessionId, ids);
  }
  const reads = [];
  for (const [sessionId, ids] of bySession) {
    const all = [...ids];
    for (let start = 0; start < all.length; start += AUDIT_BATCH) {
      const batch = all.slice(start, start + AUDIT_BATCH);
      const path = `/projects/${encodeURIComponent(project)}/sessions/${encodeURIComponent(sessionId)}/events`;
      reads.push(
        get(path, { ids: batch.join(",") }).then(
          (reply) => ({ sessionId, found: reply.body.events, missing: reply.body.missing }),
          (error) => ({ sessionId, found: [], missing: [], failed: batch, error }),
        ),
      );
    }
  }
  const events = new Map();
  for (const read of await Promise.all(reads)) {
    read.found.forEach((event) => events.set(`${read.sessionId}/${event.id}`, { event }));
    read.missing.forEach((id) => events.set(`${read.sessionId}/${id}`, { missing: true }));
    (read.failed ?? []).forEach((id) =>
      events.set(`${read.sessionId}/${id}`, { error: read.error }),
    );
  }
  return events;
}

export function citedEvent(id, found) {
  if (!found || found.missing) {
    return h(
      "li",
      { class: "event missing", dataset: { eventId: id } },
      h("code", {}, id),
      " — missing or expired",
    );
  }
  if (found.error) {
    return h(
      "li",
      { class: "event failed", dataset: { eventId: id } },
      h("code", {}, id),
      problem(found.error),
    );
  }
  const { event } = found;
  return h(
    "li",
    { class: "event", dataset: { eventId: id } },
    h(
      "p",
      {},
      h("strong", {}, event.type),
      ` by ${event.agent}`,
      event.taskId ? ` · task ${event.taskId}` : "",
      " · ",
      when(event.at),
    ),
    h("p", { class: "event-id" }, h("code", {}, id)),
    spanOf(event),
    event.data === undefined ? null : json(event.data),
  );
}

// An event received as an OpenTelemetry span names the span it came from.
function spanOf(event) {
  const span = event.data?.span;
  if (!span || typeof span !== "object") return null;
  return h(
    "p",
    { class: "span" },
    "from span ",
    h("strong", {}, String(span.name ?? "")),
    ` (${span.status ?? "unset"}, ${span.durationMs ?? "?"} ms) · span `,
    h("code", {}, String(span.spanId ?? "")),
    " of trace ",
    h("code", {}, String(span.traceId ?? "")),
  );
}
