// app.js — the console's shell: token, errors, views, global keys.

import { clearToken, getToken, onAuthError, setToken } from './api.js';
import { clear, isTyping } from './dom.js';
import { mountCluster } from './cluster.js';
import { mountSession } from './session.js';
import { mountSearch } from './search.js';
import { mountSessions } from './sessions.js';
import { current, navigate, sessionsHref, start } from './router.js';

const $ = (s) => document.querySelector(s);
const body = document.body;
const main = $('#main');
const errorBox = $('#error');
const noticeBox = $('#notice');
const tokenForm = $('#token-form');
const tokenInput = $('#token');
const search = $('#search');
const tokenClear = $('#token-clear');

let view = null;      // {kind, sid, api: {update, unmount}}
// open: the node answered without a token, as a node without --http-token(s)
// does (docs/SECURITY.md): no form is shown until a request is refused.
let open = false;
let generation = 0;
let pending = 0;

function setReady(on) { body.dataset.ready = on ? 'true' : 'false'; }

// track marks the view busy until p settles (data-ready="false" meanwhile).
function track(p) {
  const gen = generation;
  pending++;
  setReady(false);
  Promise.resolve(p).catch(() => {}).finally(() => {
    if (gen !== generation) return;
    pending = Math.max(0, pending - 1);
    if (pending === 0) setReady(true);
  });
  return p;
}

function showError(e) {
  const msg = typeof e === 'string' ? e : (e && e.message) || String(e);
  errorBox.textContent = msg;
  errorBox.hidden = false;
}

function clearError() {
  errorBox.textContent = '';
  errorBox.hidden = true;
}

// notify keeps msg for the view the next navigation opens: a notice
// outlives the view that gave it (a deleted session's view goes at once),
// and the navigation after that clears it.
let notice = '';
function notify(msg) { notice = msg; }

function showNotice() {
  noticeBox.textContent = notice;
  noticeBox.hidden = !notice;
  notice = '';
}

// reload mounts the current view anew, with everything read again.
function reload() {
  unmount();
  route(current());
}

const ctx = { track, showError, clearError, search, notify, reload };

function unmount() {
  if (view) {
    try { view.api.unmount(); } catch (e) { console.error(e); }
    view = null;
  }
  generation++;
  pending = 0;
  clear(main);
}

function showTokenForm() {
  unmount();
  tokenForm.hidden = false;
  tokenClear.hidden = true;
  body.dataset.view = 'token';
  setReady(true);
  tokenInput.value = '';
  tokenInput.focus();
}

onAuthError((err) => {
  open = false;
  showError(err.message);
  showTokenForm();
});

tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const t = tokenInput.value.trim();
  if (!t) { showError('Enter a token.'); return; }
  setToken(t);
  tokenInput.value = '';
  clearError();
  tokenForm.hidden = true;
  route(current());
});

tokenClear.addEventListener('click', () => {
  clearToken();
  clearError();
  showTokenForm();
});

function markNav(kind) {
  for (const [id, k] of [['#nav-sessions', 'sessions'], ['#nav-search', 'search'], ['#nav-cluster', 'cluster']]) {
    const a = $(id);
    if (k === kind) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
}

function route(r) {
  if (!getToken() && !open) { showTokenForm(); return; }
  tokenForm.hidden = true;
  tokenClear.hidden = !getToken();
  showNotice();
  if (view && view.kind === r.view && (r.view !== 'session' || view.sid === r.sid)) {
    view.api.update(r);
    return;
  }
  unmount();
  clearError();
  setReady(false);
  body.dataset.view = r.view;
  markNav(r.view === 'session' ? 'sessions' : r.view);
  const mount = { session: mountSession, cluster: mountCluster, search: mountSearch }[r.view] || mountSessions;
  const gen = generation;
  pending = 0;
  try {
    view = { kind: r.view, sid: r.sid, api: mount(main, r, ctx) };
  } catch (e) {
    console.error(e);
    showError(`The ${r.view} view failed: ${e.message}`);
    setReady(true);
    return;
  }
  // a view that started nothing to wait for is ready at once
  if (gen === generation && pending === 0) setReady(true);
}

// search: the catalog's name filter, from any view
let searchTimer = 0;
function applySearch() {
  clearTimeout(searchTimer);
  const q = search.value.trim();
  const r = current();
  if (r.view === 'sessions') {
    navigate(sessionsHref({ ...r.params, q }), { replace: true });
  } else {
    navigate(sessionsHref({ q }));
  }
}
search.addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(applySearch, 250);
});
search.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') { e.preventDefault(); applySearch(); }
  else if (e.key === 'Escape') { search.blur(); }
});

document.addEventListener('keydown', (e) => {
  if (e.key === '/' && !e.ctrlKey && !e.metaKey && !e.altKey && !isTyping(e.target)) {
    e.preventDefault();
    slashAt = performance.now();
    // in the search view, / goes to its own box
    if (view && view.api.focus) { view.api.focus(); return; }
    search.focus();
    search.select();
  }
});
// a "/" typed to focus the search (the header's, or the search view's) is
// not part of the query (some input paths deliver the character after the
// keydown was cancelled)
let slashAt = -1;
document.addEventListener('beforeinput', (e) => {
  if (e.data === '/' && performance.now() - slashAt < 500) { e.preventDefault(); }
  slashAt = -1;
});

// tokenFromLink keeps a token a link carries (#token=…) as if it had been
// typed, and takes it out of the address bar with replaceState, so that
// this history entry does not hold it either.
function tokenFromLink() {
  const m = /^#token=(.*)$/.exec(location.hash);
  if (!m) return;
  let t = '';
  try { t = decodeURIComponent(m[1]).trim(); } catch { /* a malformed escape: no token */ }
  if (t) setToken(t);
  history.replaceState(null, '', location.pathname + location.search);
}

// probeOpen asks the node once without a token. A node with tokens answers
// 401, which tells nothing the login form would not; a 200 means any
// request is served, so asking for a token would only be in the way.
async function probeOpen() {
  try {
    const res = await fetch('/v1/sessions?limit=1', { cache: 'no-store' });
    return res.ok;
  } catch {
    return false;
  }
}

tokenFromLink();
(getToken() ? Promise.resolve(false) : probeOpen()).then((o) => {
  open = o;
  start(route);
});
