// The public API, called with the person's bearer token. The token lives in this tab's
// sessionStorage only: never in a URL, never logged, gone when the tab closes.

const TOKEN_KEY = "evidencia.token";
export const SIGNED_OUT = "evidencia:signed-out";

// What the API accepts as ids, for the forms' own checks before a request is sent.
export const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
export const TENANT_ID = "(?!__.*__$)[A-Za-z0-9_\\-]{1,128}";

const WHO_KEY = "evidencia.who";

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  who: () => JSON.parse(sessionStorage.getItem(WHO_KEY) ?? "null"),
  // The token is kept only once GET /v1/whoami has accepted it.
  signIn: async (token) => {
    sessionStorage.setItem(TOKEN_KEY, token.trim());
    try {
      const { body } = await get("/v1/whoami");
      sessionStorage.setItem(WHO_KEY, JSON.stringify(body));
    } catch (error) {
      session.signOut();
      throw error;
    }
  },
  signOut: () => {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(WHO_KEY);
  },
};

export class ApiError extends Error {
  constructor(status, body, requestId) {
    super(body?.message || `The API answered ${status}.`);
    this.status = status;
    this.code = body?.code ?? null;
    this.issues = body?.issues ?? [];
    this.requestId = body?.request_id ?? requestId ?? null;
  }
}

function urlOf(path, query) {
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  return url;
}

export async function call(method, path, { query, body } = {}) {
  const headers = { Authorization: `Bearer ${session.token()}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(urlOf(path, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(0, { message: `The API could not be reached (${error.message}).` }, null);
  }
  const requestId = response.headers.get("x-request-id");
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { message: `The API answered ${response.status} with a body that is not JSON.` };
  }
  if (response.status === 401) {
    // The token is gone or was never good: back to sign-in, saying why.
    session.signOut();
    window.dispatchEvent(new CustomEvent(SIGNED_OUT, { detail: parsed?.message ?? null }));
  }
  if (!response.ok) throw new ApiError(response.status, parsed, requestId);
  return { body: parsed, headers: response.headers, requestId };
}

export const get = (path, query) => call("GET", path, { query });
export const post = (path, body) => call("POST", path, { body });
