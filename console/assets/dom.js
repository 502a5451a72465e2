// Every element the console shows is built here. Text is always inserted as text nodes,
// never parsed as HTML, so model and user text cannot become markup or script.

const SVG = "http://www.w3.org/2000/svg";

function fill(element, attributes, children) {
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function h(tag, attributes, ...children) {
  return fill(document.createElement(tag), attributes, children);
}

export function s(tag, attributes, ...children) {
  return fill(document.createElementNS(SVG, tag), attributes, children);
}

export function replace(container, ...children) {
  container.replaceChildren();
  return fill(container, {}, children);
}

export function field(label, input, hint) {
  const id = input.id || `f-${input.name}`;
  input.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    input,
    hint ? h("small", {}, hint) : null,
  );
}

export function dl(pairs) {
  return h(
    "dl",
    {},
    pairs
      .filter(([, value]) => value !== undefined)
      .flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value ?? "—")]),
  );
}

export function when(iso) {
  if (!iso) return "—";
  const moment = new Date(iso);
  return h("time", { datetime: iso, title: iso }, moment.toLocaleString());
}

export function json(value) {
  // Focusable, so that a keyboard can scroll a long one.
  return h("pre", { class: "json", tabindex: 0 }, JSON.stringify(value, null, 2));
}

export function disclosure(summary, ...content) {
  return h("details", {}, h("summary", {}, summary), ...content);
}

export function loading(what) {
  return h("p", { class: "loading", role: "status" }, `Loading ${what}…`);
}

export function problem(error) {
  const issues = (error.issues ?? []).map((issue) =>
    h("li", {}, `${(issue.path ?? []).join(".") || "(body)"}: ${issue.message}`),
  );
  return h(
    "div",
    {
      class: "problem",
      role: "alert",
      dataset: { status: String(error.status ?? ""), requestId: error.requestId ?? "" },
    },
    h(
      "p",
      {},
      h("strong", {}, error.status ? `Error ${error.status}` : "Error"),
      " ",
      error.message,
    ),
    issues.length ? h("ul", {}, issues) : null,
    error.requestId
      ? h("p", { class: "request-id" }, "request_id: ", h("code", {}, error.requestId))
      : null,
  );
}

// A form whose values become the view's route: submitting it navigates, so the view can be
// reloaded or shared by its address.
export function queryForm(label, fields, navigate, submit = "Show") {
  const form = h(
    "form",
    { class: "query", "aria-label": label },
    fields,
    h("button", { type: "submit" }, submit),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(
      Object.fromEntries(
        [...new FormData(form)].map(([name, value]) => [name, String(value).trim()]),
      ),
    );
  });
  return form;
}

export function input(name, value, attributes = {}) {
  return h("input", { name, value: value ?? "", autocomplete: "off", ...attributes });
}

// An id field wide enough for the whole id (a UUID is 36 characters), in a fixed-width font.
export function idInput(name, value, attributes = {}) {
  return input(name, value, { class: "id", spellcheck: "false", ...attributes });
}

// A provider's raw text: JSON indented for reading, anything else (or a cut text) as it is.
export function rawText(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function select(name, value, options) {
  return h(
    "select",
    { name },
    options.map(([optionValue, label]) =>
      h("option", { value: optionValue, selected: optionValue === (value ?? "") }, label),
    ),
  );
}

// The "Load more" button under a paged list: shown while there is a next page.
export function more(container, nextPage, load) {
  container.querySelector("button.more")?.remove();
  if (!nextPage) return;
  const button = h("button", { type: "button", class: "more secondary" }, "Load more");
  button.addEventListener("click", () => load(nextPage));
  container.append(button);
}

// An id as it is (selectable, in a fixed-width font) with a button that copies it.
export function copyableId(id) {
  const code = h("code", { class: "id" }, id);
  const button = h(
    "button",
    { type: "button", class: "copy secondary", "aria-label": `Copy the id ${id}` },
    "Copy",
  );
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(id);
      button.textContent = "Copied";
    } catch {
      window.getSelection()?.selectAllChildren(code);
      button.textContent = "Selected";
    }
  });
  return h("span", { class: "copyable" }, code, button);
}
