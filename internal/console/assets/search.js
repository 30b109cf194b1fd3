// search.js — full-text search: GET /v1/search with paging (#/search?q=&branch=).

import { getJSON, isAbort, qs } from './api.js';
import { clear, el, fmtTime } from './dom.js';
import { current, navigate, searchHref, sessionHref } from './router.js';
import { kindLabel } from './tree.js';

const PAGE = 20;

// pageSize is the URL's limit when it is one the API takes (1-100), else PAGE.
function pageSize(v) {
  const n = Number.parseInt(v, 10);
  return n >= 1 && n <= 100 ? n : PAGE;
}

// hitKind is what the tree's rows call the entry: a message's role, else
// its type.
function hitKind(h) {
  return h.type === 'message' && h.role ? h.role : h.type;
}

// snippet draws the parts as text, the matched words in <mark>: the
// server's text goes in as text nodes, never as markup.
function snippet(parts) {
  const p = el('p', { class: 'snippet' });
  for (const part of parts || []) {
    p.append(part.match ? el('mark', { text: part.text }) : document.createTextNode(part.text));
  }
  return p;
}

function hitItem(h) {
  const kind = hitKind(h);
  const href = sessionHref(h.sessionId, h.entryId);
  return el('li', { class: 'hit', dataset: { session: h.sessionId, entry: h.entryId, type: h.type, role: h.role || '', onPath: String(h.onPath) } },
    el('div', { class: 'hit-head' },
      el('span', { class: `kind kind-${kind}`, title: h.role ? `${h.type} · ${h.role}` : h.type, text: kindLabel(kind) }),
      el('a', { class: 'hit-open', href, title: h.sessionId, text: h.name || h.sessionId }),
      el('span', { class: 'hit-cwd mono', title: h.cwd, text: h.cwd }),
      el('span', { class: 'hit-type', text: h.role ? `${h.type} · ${h.role}` : h.type }),
      h.onPath ? null : el('span', { class: 'off-path', title: 'on a branch left behind: not on the path from the root to the session\'s last entry', text: 'off path' }),
      el('time', { class: 'hit-time', datetime: h.timestamp, title: h.timestamp, text: fmtTime(h.timestamp) }),
      el('span', { class: 'eid', text: h.entryId })),
    snippet(h.snippet));
}

export function mountSearch(main, route, ctx) {
  let ac = new AbortController();
  let hits = [];
  let total = 0;
  let next = null;
  let params = {};
  let linkLimit = '';
  let failed = false;

  const input = el('input', { id: 'search-q', type: 'search', placeholder: 'words "a phrase" auth* -excluded role:assistant tool:bash since:2026-12-01',
    'aria-label': 'Search entries', autocomplete: 'off', spellcheck: 'false' });
  const branch = el('select', { id: 'search-branch', 'aria-label': 'Entries searched' },
    el('option', { value: 'all', text: 'every branch' }),
    el('option', { value: 'path', text: 'default paths only' }));
  const count = el('span', { class: 'count', role: 'status' });
  const list = el('ol', { id: 'hits', class: 'hits' });
  const more = el('button', { id: 'search-more', type: 'button', hidden: true, text: 'More' });
  const form = el('form', { class: 'filters search-form', role: 'search', 'aria-label': 'Search entries' },
    input, branch, el('button', { type: 'submit', text: 'Search' }), count);

  main.append(el('div', { class: 'search-view' },
    el('h1', { text: 'Search' }),
    form,
    el('p', { class: 'hint', text: 'Every word must match (case-insensitive); "a phrase", prefix*, -word to exclude. Filters: role: type: tool: model: label: cwd: name: session: since: until: (field:"with spaces")' }),
    list,
    el('div', { class: 'pager' }, more)));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const h = searchHref({ q: input.value.trim(), branch: branch.value === 'all' ? '' : branch.value, limit: linkLimit });
    // the same search again (the URL does not change): ask again
    if (h === location.hash) update(current()); else navigate(h);
  });
  branch.addEventListener('change', () => form.requestSubmit());
  // one page at a time: a second click while one loads would ask for it twice
  more.addEventListener('click', () => {
    if (more.disabled) return;
    more.disabled = true;
    ctx.track(loadPage(next).finally(() => { more.disabled = false; }));
  });
  // a click anywhere on a hit opens it, as its link does (not when text
  // was being selected, to copy it)
  list.addEventListener('click', (e) => {
    if (e.target.closest('a')) return;
    const li = e.target.closest('li.hit');
    if (li && !String(getSelection() || '')) navigate(sessionHref(li.dataset.session, li.dataset.entry));
  });

  function draw() {
    clear(list);
    for (const h of hits) list.append(hitItem(h));
    if (!params.q) {
      count.textContent = '';
    } else if (failed) {
      count.textContent = '';
    } else if (!hits.length && !next) {
      list.append(el('li', { class: 'empty', text: 'No entry matches.' }));
      count.textContent = '0 hits';
    } else if (!hits.length) {
      // A page cut short (a node looks at a bounded number of entries a
      // request): More looks further.
      count.textContent = 'No hit in the entries looked at so far';
    } else if (next) {
      // total estimates the whole query (with branch=path, before the
      // entries off the path are left out): a guide while pages remain.
      count.textContent = `${hits.length} of about ${Math.max(total, hits.length)} hits`;
    } else {
      count.textContent = `${hits.length} hit${hits.length === 1 ? '' : 's'}`;
    }
    more.hidden = !next;
  }

  async function loadPage(cursor) {
    const q = { q: params.q, branch: params.branch, limit: params.limit, cursor };
    try {
      const r = await getJSON('Searching', '/v1/search' + qs(q), ac.signal);
      if (!cursor) hits = [];
      hits.push(...(r.hits || []));
      total = r.total || 0;
      next = r.next || null;
      failed = false;
      input.removeAttribute('aria-invalid');
      draw();
      ctx.clearError();
    } catch (e) {
      if (isAbort(e)) return;
      failed = true;
      if (e.status === 400) input.setAttribute('aria-invalid', 'true');
      ctx.showError(e);
      draw();
    }
  }

  function update(r) {
    params = { q: (r.params.q || '').trim(), branch: r.params.branch === 'path' ? 'path' : '', limit: pageSize(r.params.limit) };
    linkLimit = r.params.limit || '';
    if (document.activeElement !== input || !input.value.trim()) input.value = params.q;
    branch.value = params.branch || 'all';
    ac.abort();
    ac = new AbortController();
    hits = []; total = 0; next = null; failed = false;
    input.removeAttribute('aria-invalid');
    if (!params.q) {
      draw();
      ctx.clearError();
      input.focus();
      return;
    }
    ctx.track(loadPage(null));
  }

  update(route);
  document.title = 'Search · pi console';

  return {
    update,
    focus() { input.focus(); input.select(); },
    unmount() { ac.abort(); },
  };
}
