// The console's entry point: sign-in, the views and the hash routes between them.
// A route carries only what a view shows (#/hypotheses?project=...); never the token.

import { SIGNED_OUT, session } from "./api.js";
import { h, problem, replace } from "./dom.js";
import * as calibration from "./calibration.js";
import * as evaluations from "./evaluations.js";
import * as home from "./home.js";
import * as hypotheses from "./hypotheses.js";
import * as instructions from "./instructions.js";
import * as patterns from "./patterns.js";
import * as research from "./research.js";
import * as selection from "./selection.js";
import * as sessions from "./sessions.js";

const VIEWS = {
  home,
  hypotheses,
  patterns,
  sessions,
  research,
  evaluations,
  selection,
  instructions,
  calibration,
};

function route() {
  const [path, query] = window.location.hash.replace(/^#\/?/, "").split("?");
  const name = VIEWS[path] ? path : "home";
  return { name, params: Object.fromEntries(new URLSearchParams(query ?? "")) };
}

function go(name, params) {
  const query = new URLSearchParams(
    Object.entries(params).filter(([, value]) => value !== "" && value != null),
  );
  const next = `#/${name}${query.size ? `?${query}` : ""}`;
  if (window.location.hash === next) show();
  else window.location.hash = next;
}

function signInForm(main, refused = null) {
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const form = h(
    "form",
    { class: "sign-in", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    refused
      ? h(
          "p",
          { class: "problem signed-out", role: "alert" },
          h("strong", {}, "Signed out: "),
          `the API refused the token (${refused}). Sign in again.`,
        )
      : null,
    h(
      "p",
      {},
      "Paste a bearer token created with ",
      h("code", {}, "evidencia admin token create"),
      ". It is kept in this tab only and sent only to this API.",
    ),
    h("div", { class: "field" }, h("label", { for: "token" }, "Bearer token"), input),
    h("button", { type: "submit" }, "Sign in"),
  );
  const outcome = h("div", { class: "outcome", "aria-live": "polite" });
  form.append(outcome);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await session.signIn(input.value);
    } catch (error) {
      // A refused token (401) comes back to this form through SIGNED_OUT; any other
      // refusal (a session token, an API out of reach) is said here.
      if (error.status !== 401) replace(outcome, problem(error));
      return;
    }
    show();
  });
  replace(main, form);
  input.focus();
}

function sessionBar() {
  const bar = document.getElementById("session");
  if (!session.token()) return replace(bar);
  const out = h("button", { type: "button", class: "secondary" }, "Sign out");
  out.addEventListener("click", () => {
    session.signOut();
    home.forgetHome();
    show();
  });
  const who = session.who();
  const as = who ? ` as ${who.userId}` : "";
  const title = who ? `Signed in as ${who.userId} with a ${who.credentialClass} token` : null;
  replace(bar, h("span", { class: "signed-in", title }, `Signed in${as}`), " ", out);
}

function markCurrent(name) {
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function show() {
  const main = document.getElementById("view");
  sessionBar();
  if (!session.token()) return signInForm(main);
  const { name, params } = route();
  markCurrent(name);
  try {
    await VIEWS[name].render(main, params, (changed) => go(name, changed));
  } catch (error) {
    if (error.status !== 401) main.append(problem(error));
  }
}

window.addEventListener(SIGNED_OUT, (event) => {
  home.forgetHome();
  sessionBar();
  signInForm(document.getElementById("view"), event.detail ?? "401");
});
window.addEventListener("hashchange", show);
show();
