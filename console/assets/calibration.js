// Calibration: how often hypotheses were accepted at each band of the confidence the model
// reported for them, drawn as bars with the counts behind each band.

import { TENANT_ID, get } from "./api.js";
import { field, h, idInput, input, loading, problem, queryForm, replace, s, when } from "./dom.js";

const WIDTH = 560;
const HEIGHT = 280;
const PAD = { top: 16, right: 16, bottom: 64, left: 48 };

export async function render(main, params, navigate) {
  const form = queryForm(
    "Which hypotheses",
    [
      field("Project", idInput("project", params.project, { required: true, pattern: TENANT_ID })),
      field("Agent", input("agenteAlvo", params.agenteAlvo), "Empty: every agent of the project."),
      field("From", input("from", params.from, { type: "date" }), "Empty: 90 days before To."),
      field("To", input("to", params.to, { type: "date" }), "Empty: now."),
    ],
    navigate,
  );
  const results = h("section", {
    class: "results",
    "aria-live": "polite",
    "aria-label": "Calibration",
  });
  replace(main, h("h1", {}, "Calibration"), form, results);
  if (!params.project) return;
  replace(results, loading("the calibration"));
  const query = {
    agenteAlvo: params.agenteAlvo,
    from: instant(params.from),
    to: instant(params.to),
  };
  try {
    const reply = await get(`/projects/${encodeURIComponent(params.project)}/calibration`, query);
    replace(results, chart(reply.body), table(reply.body));
  } catch (error) {
    replace(results, problem(error));
  }
}

export function instant(day) {
  return day ? `${day}T00:00:00Z` : undefined;
}

// Below this many decisions a band's share says more about chance than about calibration.
export const MIN_DECIDED = 5;

const bandName = (band) => `${band.fromPercent}–${band.toPercent}%`;
const decidedIn = (band) => band.accepted + band.dismissed;
const enough = (band) => decidedIn(band) >= MIN_DECIDED;

function share(band) {
  const decided = decidedIn(band);
  if (decided === 0) return "no decision";
  const accepted = `${Math.round(band.acceptedRate * 100)}% accepted`;
  return enough(band) ? accepted : `too few decisions (${decided}) to tell; ${accepted} so far`;
}

function chart(calibration) {
  const inner = { width: WIDTH - PAD.left - PAD.right, height: HEIGHT - PAD.top - PAD.bottom };
  const slot = inner.width / calibration.bands.length;
  const y = (rate) => PAD.top + inner.height * (1 - rate);
  const grid = [0, 0.25, 0.5, 0.75, 1].map((rate) => [
    s("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(rate), y2: y(rate), class: "grid" }),
    s(
      "text",
      { x: PAD.left - 6, y: y(rate) + 4, "text-anchor": "end", class: "tick" },
      `${rate * 100}%`,
    ),
  ]);
  const bars = calibration.bands.map((band, index) => {
    const x = PAD.left + index * slot + slot * 0.15;
    const decided = decidedIn(band);
    const rate = enough(band) ? band.acceptedRate : 0;
    let state = "enough";
    if (decided === 0) state = "empty";
    else if (!enough(band)) state = "insufficient";
    return s(
      "g",
      {
        class: "band",
        "data-band": bandName(band),
        "data-accepted": band.accepted,
        "data-dismissed": band.dismissed,
        "data-proposed": band.proposed,
        "data-hypotheses": band.hypotheses,
        "data-state": state,
      },
      s(
        "title",
        {},
        `${bandName(band)}: ${band.accepted} of ${decided} decided accepted, ${band.proposed} still proposed`,
      ),
      state === "insufficient"
        ? s("rect", {
            x,
            y: PAD.top,
            width: slot * 0.7,
            height: inner.height,
            class: "bar insufficient",
          })
        : s("rect", {
            x,
            y: y(rate),
            width: slot * 0.7,
            height: inner.height * rate,
            class: state === "empty" ? "bar empty" : "bar",
          }),
      s(
        "text",
        {
          x: x + slot * 0.35,
          y: state === "insufficient" ? PAD.top + inner.height / 2 : y(rate) - 4,
          "text-anchor": "middle",
          class: "value",
        },
        { empty: "–", insufficient: "too few", enough: `${band.accepted}/${decided}` }[state],
      ),
      s(
        "text",
        { x: x + slot * 0.35, y: HEIGHT - PAD.bottom + 16, "text-anchor": "middle", class: "tick" },
        bandName(band),
      ),
      s(
        "text",
        {
          x: x + slot * 0.35,
          y: HEIGHT - PAD.bottom + 30,
          "text-anchor": "middle",
          class: "tick count",
        },
        `${decided} decided`,
      ),
    );
  });
  const label = calibration.bands.map((band) => `${bandName(band)}: ${share(band)}`).join("; ");
  return h(
    "figure",
    { class: "calibration" },
    s(
      "svg",
      {
        viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
        role: "img",
        "aria-label": `Accepted share per confidence band. ${label}`,
      },
      grid,
      bars,
      s(
        "text",
        { x: PAD.left + inner.width / 2, y: HEIGHT - 8, "text-anchor": "middle", class: "axis" },
        "The model's self-reported confidence",
      ),
    ),
    h(
      "figcaption",
      {},
      `Share of decided hypotheses that were accepted, per band of the model's confidence; a band with fewer than ${MIN_DECIDED} decisions is drawn as too few to tell · ${calibration.agenteAlvo ?? "all agents"} · `,
      when(calibration.from),
      " to ",
      when(calibration.to),
    ),
  );
}

function table(calibration) {
  return h(
    "table",
    { class: "counts" },
    h("caption", {}, "The counts behind each band"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        [
          "Confidence",
          "Hypotheses",
          "Accepted",
          "Dismissed",
          "Proposed",
          "Accepted share",
          "Trials that found the change helpful",
        ].map((name) => h("th", { scope: "col" }, name)),
      ),
    ),
    h(
      "tbody",
      {},
      calibration.bands.map((band) =>
        h(
          "tr",
          { dataset: { band: bandName(band) } },
          h("th", { scope: "row" }, bandName(band)),
          [band.hypotheses, band.accepted, band.dismissed, band.proposed].map((count) =>
            h("td", {}, count),
          ),
          h("td", {}, share(band)),
          h("td", { class: "trials" }, trialsFound(band.trials)),
        ),
      ),
    ),
  );
}

function trialsFound(trials) {
  if (trials.stopped === 0) return "no trial stopped";
  return `${trials.helpful} of ${trials.stopped} stopped trials`;
}
