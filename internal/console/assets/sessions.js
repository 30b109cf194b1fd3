// sessions.js — the catalog: GET /v1/sessions with filters and paging.

import { getJSON, isAbort, qs } from './api.js';
import { clear, el, fmtTime, forkTitle, parentSessionId, shortId } from './dom.js';
import { navigate, sessionHref, sessionsHref } from './router.js';

const PAGE = 100;

// pageSize is the catalog's page: PAGE, or the URL's limit (1-1000, the
// API's bounds) for a link that wants smaller pages.
function pageSize(v) {
  const n = Number.parseInt(v, 10);
  return n >= 1 && n <= 1000 ? n : PAGE;
}

// since accepts a date (YYYY-MM-DD, midnight UTC) or RFC 3339.
function sinceParam(v) {
  v = (v || '').trim();
  if (!v) return '';
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return `${v}T00:00:00Z`;
  return v;
}

export function mountSessions(main, route, ctx) {
  let ac = new AbortController();
  let sessions = [];
  let next = null;
  let params = {};
  let linkLimit = ''; // the URL's limit, as it was given: Apply and Clear keep it

  const cwd = el('input', { id: 'filter-cwd', type: 'text', placeholder: '/home/dev/project (exact)', autocomplete: 'off', spellcheck: 'false' });
  const label = el('input', { id: 'filter-label', type: 'text', placeholder: 'label', autocomplete: 'off', spellcheck: 'false' });
  const since = el('input', { id: 'filter-since', type: 'text', placeholder: 'YYYY-MM-DD or RFC 3339', autocomplete: 'off', spellcheck: 'false' });
  const count = el('span', { class: 'count', role: 'status' });
  const tbody = el('tbody');
  const more = el('button', { id: 'more', type: 'button', hidden: true, text: 'Load more' });
  const filters = el('form', { class: 'filters', role: 'search', 'aria-label': 'Filter sessions' },
    el('label', null, 'cwd ', cwd),
    el('label', null, 'label ', label),
    el('label', null, 'modified since ', since),
    el('button', { type: 'submit', text: 'Apply' }),
    el('button', { type: 'button', class: 'secondary', text: 'Clear', onclick: () => {
      ctx.search.value = ''; cwd.value = ''; label.value = ''; since.value = ''; apply();
    } }),
    count);

  main.append(el('div', { class: 'sessions-view' },
    el('h1', { text: 'Sessions' }),
    filters,
    el('table', { id: 'sessions', class: 'grid' },
      el('thead', null, el('tr', null,
        el('th', { scope: 'col', text: 'Session' }),
        el('th', { scope: 'col', text: 'Name' }),
        el('th', { scope: 'col', text: 'cwd' }),
        el('th', { scope: 'col', class: 'num', text: 'Entries' }),
        el('th', { scope: 'col', text: 'Modified' }),
        el('th', { scope: 'col', text: 'First message' }),
        el('th', { scope: 'col', text: 'Fork of' }))),
      tbody),
    el('div', { class: 'pager' }, more)));

  function current() {
    return { q: ctx.search.value.trim(), cwd: cwd.value.trim(), label: label.value.trim(), since: since.value.trim(), limit: linkLimit };
  }

  function apply() {
    navigate(sessionsHref(current()), { replace: true });
  }

  filters.addEventListener('submit', (e) => { e.preventDefault(); apply(); });
  // Enter in a field submits the form
  for (const input of [cwd, label, since]) input.addEventListener('change', apply);
  more.addEventListener('click', () => ctx.track(loadPage(next)));
  tbody.addEventListener('click', (e) => {
    if (e.target.closest('a')) return;
    const tr = e.target.closest('tr[data-session]');
    if (tr) navigate(sessionHref(tr.dataset.session));
  });

  function draw() {
    clear(tbody);
    const sorted = [...sessions].sort((a, b) => {
      const ta = Date.parse(a.modified) || 0, tb = Date.parse(b.modified) || 0;
      return tb - ta || (a.sessionId < b.sessionId ? 1 : -1);
    });
    for (const s of sorted) {
      const parent = parentSessionId(s.parentSession);
      tbody.append(el('tr', { dataset: { session: s.sessionId } },
        el('td', { class: 'id' }, el('a', { class: 'open mono', href: sessionHref(s.sessionId), title: s.sessionId, text: s.sessionId })),
        el('td', { class: 'name', title: s.name || '', text: s.name || '' }),
        el('td', { class: 'cwd mono', title: s.cwd || '', text: s.cwd || '' }),
        el('td', { class: 'entries num', text: String(s.entryCount ?? '') }),
        el('td', { class: 'modified' }, el('time', { datetime: s.modified, title: s.modified, text: fmtTime(s.modified) })),
        el('td', { class: 'first-message', title: s.firstMessage || '', text: s.firstMessage || '' }),
        el('td', { class: 'fork' }, parent
          ? el('a', { class: 'fork-parent mono', href: sessionHref(parent), title: forkTitle(parent, s.parentSession), text: shortId(parent) })
          : null)));
    }
    if (!sessions.length) {
      tbody.append(el('tr', { class: 'empty' }, el('td', { colspan: '7', text: 'No sessions match.' })));
    }
    count.textContent = `${sessions.length} session${sessions.length === 1 ? '' : 's'}${next ? ' (more available)' : ''}`;
    more.hidden = !next;
  }

  async function loadPage(cursor) {
    const q = {
      preview: 'true', limit: params.limit, name: params.q, cwd: params.cwd, label: params.label,
      since: sinceParam(params.since), cursor,
    };
    try {
      const r = await getJSON('Listing the sessions', '/v1/sessions' + qs(q), ac.signal);
      if (!cursor) sessions = [];
      sessions.push(...(r.sessions || []));
      next = r.next || null;
      draw();
      ctx.clearError();
    } catch (e) {
      if (isAbort(e)) return;
      ctx.showError(e);
      draw();
    }
  }

  function update(r) {
    params = { q: r.params.q || '', cwd: r.params.cwd || '', label: r.params.label || '', since: r.params.since || '',
      limit: pageSize(r.params.limit) };
    linkLimit = r.params.limit || '';
    if (ctx.search.value.trim() !== params.q && document.activeElement !== ctx.search) ctx.search.value = params.q;
    cwd.value = params.cwd; label.value = params.label; since.value = params.since;
    ac.abort();
    ac = new AbortController();
    next = null;
    ctx.track(loadPage(null));
  }

  update(route);
  document.title = 'Sessions · pi console';

  return {
    update,
    unmount() { ac.abort(); },
  };
}
