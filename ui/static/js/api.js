// The JSON API client. The credential lives in sessionStorage (this tab
// only, gone when it closes) and travels in the Authorization header,
// never in a URL.

const TOKEN = 'svc.token';
const MODE = 'svc.mode';
const WS = 'svc.workspace';

export const session = {
  token: () => sessionStorage.getItem(TOKEN) || '',
  mode: () => sessionStorage.getItem(MODE) || '',
  workspace: () => sessionStorage.getItem(WS) || '',
  signedIn: () => !!sessionStorage.getItem(MODE),
  signIn(token, mode) {
    sessionStorage.setItem(TOKEN, token || '');
    sessionStorage.setItem(MODE, mode);
  },
  setWorkspace(ws) { if (ws) sessionStorage.setItem(WS, ws); else sessionStorage.removeItem(WS); },
  clear() { sessionStorage.removeItem(TOKEN); sessionStorage.removeItem(MODE); sessionStorage.removeItem(WS); },
};

// ApiError is a non-2xx answer: status, the error body's code, message and
// request id.
export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

// call sends one request; token overrides the session's (sign-in checks a
// key before keeping it). It resolves {data, headers, text}: text is the
// body as received, for a page that must show part of it exactly (the
// approvals inbox shows an agent's arguments number for number).
export async function call(method, path, body, opts = {}) {
  const headers = { Accept: 'application/json' };
  const token = opts.token !== undefined ? opts.token : session.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  const ws = session.workspace();
  if (ws && opts.token === undefined) headers['x-svc-workspace'] = ws;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal, cache: 'no-store', credentials: 'omit', redirect: 'error',
  });
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(res.status, e.code, e.message, e.requestId || res.headers.get('X-Request-Id'));
    if (res.status === 401 && opts.token === undefined) onUnauthorized(err);
    throw err;
  }
  return { data, headers: res.headers, text };
}

export async function get(path, opts) { return (await call('GET', path, undefined, opts)).data; }
export async function post(path, body, opts) { return (await call('POST', path, body === undefined ? {} : body, opts)).data; }

export const NEXT_CURSOR = 'X-Svc-Next-Cursor';
