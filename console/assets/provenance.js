// Which model produced what the console shows. The local development model
// (`make run LOCAL_MODEL=1`) reports this model version: nothing it wrote came from Gemini.

import { h } from "./dom.js";

export const LOCAL_MODEL_VERSION = "evidencia-local";

export const isLocal = (...versions) => versions.includes(LOCAL_MODEL_VERSION);

// "gemini-3.8-flash (version gemini-3.8-flash-001)", or the local model said as such.
export function madeBy(model, version) {
  if (isLocal(model, version)) {
    return h(
      "span",
      { class: "provenance local" },
      `Made up by the local development model (${LOCAL_MODEL_VERSION}), not by Gemini`,
    );
  }
  const named = model ?? "model not recorded";
  let text = `${named} (version ${version})`;
  if (!version) text = `${named} (version not reported)`;
  else if (version === model) text = named;
  return h("span", { class: "provenance" }, text);
}
