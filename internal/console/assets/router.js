// router.js — hash routing: #/sessions?q=, #/s/<sid>, #/s/<sid>/e/<eid>, #/search?q=, #/cluster.

import { qs } from './api.js';

export function parse(hash) {
  let h = (hash || '').replace(/^#/, '');
  if (!h.startsWith('/')) h = '/' + h;
  let query = '';
  const qi = h.indexOf('?');
  if (qi >= 0) { query = h.slice(qi + 1); h = h.slice(0, qi); }
  const params = Object.fromEntries(new URLSearchParams(query));
  const parts = h.split('/').filter(Boolean).map((p) => {
    try { return decodeURIComponent(p); } catch { return p; }
  });
  if (parts[0] === 's' && parts[1]) {
    return { view: 'session', sid: parts[1], eid: parts[2] === 'e' && parts[3] ? parts[3] : null, params };
  }
  if (parts[0] === 'cluster') return { view: 'cluster', params };
  if (parts[0] === 'search') return { view: 'search', params };
  return { view: 'sessions', params };
}

export function sessionHref(sid, eid) {
  return `#/s/${encodeURIComponent(sid)}` + (eid ? `/e/${encodeURIComponent(eid)}` : '');
}

export function sessionsHref(params = {}) {
  return '#/sessions' + qs(params);
}

export function searchHref(params = {}) {
  return '#/search' + qs(params);
}

let handler = null;

export function start(fn) {
  handler = fn;
  window.addEventListener('hashchange', () => handler(parse(location.hash)));
  handler(parse(location.hash));
}

// navigate changes the URL; replace: without a new history entry.
export function navigate(hash, { replace = false } = {}) {
  if (hash === location.hash) return;
  if (replace) {
    history.replaceState(null, '', hash);
    if (handler) handler(parse(location.hash));
  } else {
    location.hash = hash;
  }
}

export function current() { return parse(location.hash); }
