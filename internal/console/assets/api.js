// api.js — calls to pi-node's /v1 API with the stored bearer token.

const TOKEN_KEY = 'pi-console-token';

export function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

// ApiError carries the HTTP status and the code of the API's error object
// ({"error":{"code","message","lastSeq"}}); its message says what failed
// and why. lastSeq: a conflict's session's last sequence, if the body has it.
export class ApiError extends Error {
  constructor(what, status, code, message, lastSeq) {
    super(describe(what, status, code, message));
    this.name = 'ApiError';
    this.status = status;
    this.code = code || '';
    this.lastSeq = lastSeq;
  }
  get isAuth() { return this.status === 401 || this.status === 403; }
}

function describe(what, status, code, message) {
  if (status === 401 || status === 403) {
    return `The token was refused (${status} ${code || (status === 401 ? 'unauthorized' : 'forbidden')})` +
      (message ? `: ${message}` : '') + ' — enter a read token.';
  }
  if (status === 0) return `${what} failed: network error${message ? ` (${message})` : ''}.`;
  return `${what} failed (${status}${code ? ' ' + code : ''})${message ? ': ' + message : ''}.`;
}

let authHandler = null;

// onAuthError registers what to do when a reply is 401/403 (show the token form).
export function onAuthError(fn) { authHandler = fn; }

export function reportAuth(err) {
  if (authHandler) authHandler(err);
}

function headers(extra) {
  const h = new Headers(extra || {});
  const t = getToken();
  if (t) h.set('Authorization', `Bearer ${t}`);
  return h;
}

async function errorFrom(what, res) {
  let code = '', message = '', lastSeq;
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text);
      if (body && body.error) {
        code = body.error.code || '';
        message = body.error.message || '';
        if (typeof body.error.lastSeq === 'number') lastSeq = body.error.lastSeq;
      } else {
        message = text.slice(0, 200);
      }
    } catch {
      message = text.slice(0, 200);
    }
  } catch { /* body unreadable */ }
  if (!code) code = res.statusText || '';
  return new ApiError(what, res.status, code, message, lastSeq);
}

// request does one call; what names it for error messages ("Loading the session").
// Options: method (GET by default), signal, headers (besides
// Authorization), raw (return the Response), text (return the body as
// text); else the body as JSON. A 401/403 is reported to onAuthError's
// handler before it is thrown, but with ownForbidden a 403 is the caller's
// to explain: a write refused to a read token must not end the view.
export async function request(what, path, opts = {}) {
  let res;
  try {
    res = await fetch(path, {
      method: opts.method || 'GET',
      headers: headers(opts.headers),
      signal: opts.signal,
      cache: 'no-store',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(what, 0, 'network', e && e.message ? e.message : String(e));
  }
  if (!res.ok) {
    const err = await errorFrom(what, res);
    if (err.isAuth && !(opts.ownForbidden && err.status === 403)) reportAuth(err);
    throw err;
  }
  if (opts.raw) return res;
  if (opts.text) return res.text();
  return res.json();
}

export function getJSON(what, path, signal) {
  return request(what, path, { signal });
}

export function getText(what, path, signal) {
  return request(what, path, { signal, text: true });
}

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    u.set(k, String(v));
  }
  const s = u.toString();
  return s ? `?${s}` : '';
}

export const sessionPath = (sid) => `/v1/sessions/${encodeURIComponent(sid)}`;

export function isAbort(e) {
  return e && (e.name === 'AbortError');
}
