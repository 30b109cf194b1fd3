// session.js — the session view: the tree, the selected entry, its
// context, exports, cursors, the live stream and the delete.

import { getJSON, getText, isAbort, qs, request, sessionPath } from './api.js';
import { clear, el, fmtTime, forkTitle, isTyping, parentSessionId, shortId } from './dom.js';
import { clearContext, drawContext, loadContext } from './context.js';
import { Watch } from './live.js';
import { navigate, sessionHref, sessionsHref } from './router.js';
import { entryType, summarize } from './summary.js';
import { ROW_HEIGHT, TreeModel, TreeView } from './tree.js';

// FORKS_SHOWN: the forks the head lists, one page of the list API; a
// session with more says so rather than paging a line of links.
const FORKS_SHOWN = 100;

export function mountSession(main, route, ctx) {
  const sid = route.sid;
  const ac = new AbortController();
  const model = new TreeModel();
  let wantedEid = route.eid; // the entry the URL names (it may change while loading)
  const state = {
    info: null,
    lastSeq: 0,        // the session's last sequence as the page shows it: get's, then each live entry's
    queuedSeq: 0,      // the highest sequence of the entries queued for the next flush
    leafId: null,
    name: null,
    cursors: [],
    cursorKey: '',
    marks: new Map(),
    selectedId: null,
    source: 'default',
    exportLines: null,
    exportHeader: null,
    exportUrl: null,
    branchUrl: null,
    exportStale: true, // the export is older than the tree (or not fetched yet)
    exportGen: 0,      // bumped by every batch of live entries
    exportFetch: null, // the export's fetch under way
    newCount: 0,
    newestId: null,
    queue: [],
    flushTimer: 0,
    ctxCtrl: null,
    ctxTimer: 0,
    pollTimer: 0,
    polling: false,
    watch: null,
    gone: false,
  };

  // ---- DOM ----
  const title = el('h1', { id: 'session-title', text: sid });
  const meta = el('div', { class: 'meta' });
  // The session's own forks (the other direction of meta's "fork of"):
  // apart from meta, which every live entry redraws, as they are read once.
  const forksEl = el('div', { id: 'forks', class: 'meta forks', hidden: true });
  // pi 1.1's usage per model (get's include=usage), shown when anything was spent.
  const usageEl = el('details', { id: 'usage', class: 'usage', hidden: true });
  const live = el('span', { id: 'live', class: 'live', 'data-state': 'off', role: 'status', text: 'off' });
  const exportA = el('a', { id: 'export', class: 'button', download: `${sid}.jsonl`, 'aria-disabled': 'true', text: 'Export' });
  const branchA = el('a', { id: 'export-branch', class: 'button', 'aria-disabled': 'true', text: 'Export branch' });
  const deleteB = el('button', { id: 'delete', type: 'button', class: 'secondary danger', disabled: true, text: 'Delete…' });
  const newMarker = el('button', { id: 'new-marker', type: 'button', hidden: true, text: '0 new' });
  const treeEl = el('div', { id: 'tree', role: 'tree', tabindex: '0', 'aria-label': 'Session tree' });
  const scroll = el('div', { id: 'tree-scroll' }, treeEl);
  const entryJson = el('pre', { id: 'entry-json', class: 'json' });
  const entryPath = el('ol', { id: 'entry-path', class: 'path' });
  const entryNote = el('p', { class: 'empty', text: 'Select an entry in the tree (click, or arrows and Enter).' });
  const source = el('select', { id: 'context-source', 'aria-label': 'Context of' });
  const contextSec = el('section', { id: 'context', 'aria-labelledby': 'context-h' },
    el('div', { class: 'section-head' },
      el('h2', { id: 'context-h', text: 'Context' }),
      el('label', { class: 'inline' }, 'of ', source)),
    el('div', { id: 'context-info', class: 'info' }),
    el('div', { class: 'context-cols' },
      el('div', { id: 'context-agent', class: 'context-col' }),
      el('div', { id: 'context-llm', class: 'context-col' })),
    el('details', { id: 'context-raw' },
      el('summary', { text: 'Raw replies' }),
      el('h4', { text: 'GET …/context (agent)' }), el('pre', { id: 'context-json', class: 'json' }),
      el('h4', { text: 'GET …/context?format=llm' }), el('pre', { id: 'context-llm-json', class: 'json' })));

  main.append(el('div', { class: 'session-view' },
    el('div', { class: 'session-head' },
      el('div', { class: 'titles' }, title, meta, forksEl, usageEl),
      el('div', { class: 'actions' }, live, exportA, branchA, deleteB)),
    el('div', { class: 'session-body' },
      el('div', { class: 'tree-pane' },
        el('div', { class: 'tree-tools' },
          el('span', { class: 'hint', text: '↑↓ move · ←→ collapse/expand · Enter open · Esc clear' }),
          el('button', { type: 'button', class: 'small', text: 'Expand all', onclick: () => expandAll() }),
          el('button', { type: 'button', class: 'small', text: 'Go to leaf', onclick: () => state.leafId && select(state.leafId, 'click') })),
        el('div', { class: 'tree-wrap' }, scroll, newMarker)),
      el('div', { class: 'panels' },
        el('section', { id: 'entry', 'aria-labelledby': 'entry-h' },
          el('h2', { id: 'entry-h', text: 'Entry' }), entryNote, entryPath, entryJson),
        contextSec))));

  const view = new TreeView(scroll, treeEl, model, {
    onSelect: (id, how) => select(id, how),
    marks: () => ({ leafId: state.leafId, cursors: state.marks }),
    selectedId: () => state.selectedId,
  });

  // ---- selection ----
  function select(id, how) {
    const node = model.get(id);
    if (!node) {
      ctx.showError(`Entry ${id} is not in session ${sid}.`);
      return;
    }
    const changed = state.selectedId !== id;
    state.selectedId = id;
    model.expandTo(id);
    view.refresh();
    view.reveal(id, how === 'url');
    if (how === 'click' || how === 'enter' || how === 'url') {
      if (how !== 'url') navigate(sessionHref(sid, id));
      if (how === 'click') treeEl.focus({ preventScroll: true });
    }
    if (!changed && how === 'url' && state.source === 'selected') return;
    drawEntry();
    state.source = 'selected';
    drawSources();
    updateBranchExport();
    scheduleContext(how === 'key' ? 200 : 0);
  }

  function clearSelection() {
    if (!state.selectedId) return;
    state.selectedId = null;
    view.invalidate();
    drawEntry();
    if (state.source === 'selected') state.source = 'default';
    drawSources();
    updateBranchExport();
    scheduleContext(0);
  }

  function drawEntry() {
    clear(entryPath);
    const id = state.selectedId;
    entryNote.hidden = !!id;
    if (!id) { entryJson.textContent = ''; return; }
    const node = model.get(id);
    entryJson.textContent = JSON.stringify(node.entry, null, 2);
    for (const n of model.path(id)) {
      entryPath.append(el('li', { dataset: { id: n.id, type: entryType(n.entry) }, class: n.id === id ? 'current' : null },
        el('a', { href: sessionHref(sid, n.id), class: 'eid', text: n.id }),
        el('span', { class: 'summary', text: summarize(n.entry) })));
    }
  }

  // ---- context ----
  function drawSources() {
    clear(source);
    source.append(el('option', { value: 'default', text: `default leaf (${state.leafId ?? 'none'})` }));
    for (const c of state.cursors) {
      source.append(el('option', { value: `cursor:${c.client}`, text: `cursor ${c.client} (${c.leafId ?? 'null'})` }));
    }
    source.append(el('option', { value: 'selected', disabled: !state.selectedId,
      text: state.selectedId ? `selected entry (${state.selectedId})` : 'selected entry (none)' }));
    if (state.source.startsWith('cursor:') && !state.cursors.some((c) => `cursor:${c.client}` === state.source)) {
      state.source = state.selectedId ? 'selected' : 'default';
    }
    source.value = state.source;
  }

  source.addEventListener('change', () => {
    state.source = source.value;
    scheduleContext(0);
  });

  function sourceRequest() {
    if (state.source === 'selected' && state.selectedId) return { leaf: state.selectedId };
    if (state.source.startsWith('cursor:')) return { client: state.source.slice(7) };
    return {};
  }

  function scheduleContext(delay) {
    clearTimeout(state.ctxTimer);
    if (state.ctxCtrl) state.ctxCtrl.abort();
    if (delay) state.ctxTimer = setTimeout(() => ctx.track(refreshContext()), delay);
    else ctx.track(refreshContext());
  }

  async function refreshContext() {
    if (state.ctxCtrl) state.ctxCtrl.abort();
    const ctrl = new AbortController();
    state.ctxCtrl = ctrl;
    if (!model.size) { clearContext(contextSec, 'The session has no entries.'); return; }
    try {
      const raw = await loadContext(sid, sourceRequest(), ctrl.signal);
      if (ctrl.signal.aborted) return;
      drawContext(contextSec, raw, model);
    } catch (e) {
      if (isAbort(e) || ctrl.signal.aborted) return;
      clearContext(contextSec, 'No context.');
      ctx.showError(e);
    }
  }

  // ---- export ----
  // The export is fetched at load, so that the links work at once. Live
  // entries only mark it stale; it is fetched again when a link is about
  // to be used (the pointer over it, or focus), and a link clicked while
  // stale fetches first, then downloads.
  function fetchExport() {
    if (state.exportFetch) return state.exportFetch;
    const gen = state.exportGen;
    state.exportFetch = (async () => {
      try {
        const text = await getText('Exporting the session', sessionPath(sid) + '/export', ac.signal);
        state.exportLines = new Map();
        state.exportHeader = null;
        for (const line of text.split('\n')) {
          if (!line.trim()) continue;
          let obj;
          try { obj = JSON.parse(line); } catch { continue; }
          if (obj && obj.type === 'session' && state.exportHeader === null) state.exportHeader = line;
          else if (obj && typeof obj.id === 'string') state.exportLines.set(obj.id, line);
        }
        if (state.exportUrl) URL.revokeObjectURL(state.exportUrl);
        state.exportUrl = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
        state.exportStale = gen !== state.exportGen; // entries came meanwhile
        exportA.href = state.exportUrl;
        exportA.removeAttribute('aria-disabled');
        markStale(exportA, state.exportStale);
        updateBranchExport();
      } finally {
        state.exportFetch = null;
      }
    })();
    return state.exportFetch;
  }

  // ensureExport waits for the fetch under way, and fetches again if the
  // export is still stale.
  async function ensureExport() {
    if (state.exportFetch) await state.exportFetch.catch(() => {});
    if (state.exportStale) await fetchExport();
  }

  function markStale(a, on) {
    if (on) a.dataset.stale = 'true'; else delete a.dataset.stale;
  }

  // linkReady: a click may download what the link has (data-stale is
  // set on #export whenever state.exportStale is).
  const linkReady = (a) => a.hasAttribute('href') && a.dataset.stale !== 'true';

  function markExportStale() {
    state.exportGen++;
    state.exportStale = true;
    markStale(exportA, true);
  }

  function updateBranchExport() {
    if (state.branchUrl) { URL.revokeObjectURL(state.branchUrl); state.branchUrl = null; }
    const id = state.selectedId;
    branchA.removeAttribute('href');
    markStale(branchA, false);
    branchA.removeAttribute('tabindex');
    if (!id) {
      branchA.setAttribute('aria-disabled', 'true');
      return;
    }
    branchA.removeAttribute('aria-disabled');
    let lines = null;
    if (state.exportHeader !== null) {
      lines = [state.exportHeader];
      for (const n of model.path(id)) {
        const line = state.exportLines.get(n.id);
        if (line === undefined) { lines = null; break; } // arrived after the export
        lines.push(line);
      }
    }
    if (!lines) {
      // the export lacks the path: fetched again when the link is used
      state.exportStale = true;
      markStale(exportA, true);
      markStale(branchA, true);
      branchA.setAttribute('tabindex', '0'); // focusable without an href
      return;
    }
    state.branchUrl = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'application/x-ndjson' }));
    branchA.href = state.branchUrl;
    branchA.download = `${sid}-${id}.jsonl`;
  }

  let downloading = false; // the click that downloads after a fetch
  for (const a of [exportA, branchA]) {
    const warm = () => {
      if (state.exportStale) ensureExport().catch((e) => { if (!isAbort(e)) ctx.showError(e); });
    };
    a.addEventListener('pointerenter', warm);
    a.addEventListener('focus', warm);
    a.addEventListener('click', (e) => {
      if (downloading || linkReady(a)) return;
      e.preventDefault();
      ensureExport().then(() => {
        if (!a.hasAttribute('href')) return;
        downloading = true;
        try { a.click(); } finally { downloading = false; }
      }, (err) => { if (!isAbort(err)) ctx.showError(err); });
    });
  }

  // ---- head ----
  function drawHead() {
    const info = state.info;
    title.textContent = state.name || sid;
    document.title = `${state.name || sid.slice(0, 8)} · pi console`;
    clear(meta);
    if (!info) return;
    const parent = parentSessionId(info.parentSession);
    meta.append(...[
      el('span', { class: 'mono', text: sid }),
      el('span', { text: info.cwd || '' }),
      el('span', { class: 'entry-count', text: `${model.size} entries` }),
      el('span', { text: `modified ${fmtTime(info.modified)}` }),
      parent ? el('span', null, 'fork of ', el('a', { class: 'fork-parent mono', href: sessionHref(parent),
        title: forkTitle(parent, info.parentSession), text: shortId(parent) })) : null,
    ].filter(Boolean));
  }

  // ---- forks ----
  // loadForks lists the sessions forked from this one (the list's
  // parentSession filter), once, when the session opens: a fork made
  // later shows on the next visit. A failure is shown but does not stop
  // the view, which has everything else to show.
  async function loadForks() {
    try {
      const r = await getJSON('Listing the forks', '/v1/sessions' + qs({ parentSession: sid, limit: FORKS_SHOWN }), ac.signal);
      // Only sessions that name this one: a node that does not know the
      // filter (an older one, in a cluster being upgraded) ignores it, as
      // any unknown query, and lists every session.
      const forks = (r.sessions || []).filter((f) => parentSessionId(f.parentSession) === sid);
      drawForks(forks, !!r.next);
    } catch (e) {
      if (!isAbort(e)) ctx.showError(e);
    }
  }

  // drawForks shows "forks:" and a link to each (in the list's order, the
  // oldest first), or nothing for a session without forks; more: the
  // list has another page.
  function drawForks(forks, more) {
    clear(forksEl);
    forksEl.hidden = forks.length === 0;
    if (forksEl.hidden) return;
    const links = forks.map((f) => el('a', { class: 'fork-child mono', href: sessionHref(f.sessionId),
      title: f.name ? `${f.sessionId}\n${f.name}` : f.sessionId, text: shortId(f.sessionId) }));
    forksEl.append(el('span', null, 'forks: ', ...links.flatMap((a, i) => (i ? [', ', a] : [a])),
      more ? el('span', { class: 'forks-more', title: `more than ${FORKS_SHOWN} forks`, text: ' + more' }) : null));
  }

  // drawUsage shows the usage breakdown: a line with the total, opening
  // to a row per provider/model (and Tools/summaries), highest cost first.
  function drawUsage(rows) {
    clear(usageEl);
    usageEl.hidden = !Array.isArray(rows) || rows.length === 0;
    if (usageEl.hidden) return;
    const cost = rows.reduce((n, r) => n + r.cost, 0);
    const tokens = rows.reduce((n, r) => n + r.tokens, 0);
    usageEl.append(el('summary', { text: `usage: $${cost.toFixed(4)} · ${tokens} tokens · ${rows.length} ${rows.length === 1 ? 'model' : 'models'}` }),
      el('table', { class: 'usage-rows' },
        el('thead', null, el('tr', null, el('th', { text: 'model' }), el('th', { text: 'tokens' }), el('th', { text: 'cost' }))),
        el('tbody', null, ...rows.map((r) => el('tr', { dataset: { key: r.key } },
          el('td', { text: r.key }), el('td', { class: 'num', text: String(r.tokens) }), el('td', { class: 'num', text: `$${r.cost.toFixed(4)}` }))))));
  }

  // refreshUsage reads the breakdown again after live entries that carry
  // usage, once for a burst of them.
  function refreshUsage() {
    clearTimeout(state.usageTimer);
    state.usageTimer = setTimeout(() => ctx.track((async () => {
      const info = await getJSON('Reading the usage', sessionPath(sid) + qs({ include: 'usage' }), ac.signal);
      drawUsage(info.usageBreakdown);
    })()), 500);
  }

  // ---- cursors ----
  function setCursors(list) {
    const key = JSON.stringify(list.map((c) => [c.client, c.leafId]));
    if (key === state.cursorKey) return false;
    const before = new Map(state.cursors.map((c) => [c.client, c.leafId]));
    state.cursorKey = key;
    state.cursors = list;
    state.marks = new Map();
    for (const c of list) {
      if (!c.leafId) continue;
      if (!state.marks.has(c.leafId)) state.marks.set(c.leafId, []);
      state.marks.get(c.leafId).push(c.client);
    }
    view.invalidate();
    drawSources();
    if (state.source.startsWith('cursor:')) {
      const c = state.source.slice(7);
      const now = list.find((x) => x.client === c);
      if (now && before.get(c) !== now.leafId) scheduleContext(0);
    }
    return true;
  }

  async function pollCursors() {
    if (state.polling || state.gone || document.visibilityState !== 'visible') return;
    state.polling = true;
    try {
      const r = await getJSON('Reading the cursors', sessionPath(sid) + '/cursors', ac.signal);
      setCursors(r.cursors || []);
    } catch (e) {
      if (!isAbort(e) && !e.isAuth) ctx.showError(e);
    } finally {
      state.polling = false;
    }
  }
  const onVisible = () => { if (document.visibilityState === 'visible') pollCursors(); };
  document.addEventListener('visibilitychange', onVisible);

  // ---- live ----
  function onEntry(entry, seq) {
    if (seq > state.queuedSeq) state.queuedSeq = seq;
    state.queue.push(entry);
    if (!state.flushTimer) state.flushTimer = setTimeout(flush, 30);
  }

  function flush() {
    state.flushTimer = 0;
    const batch = state.queue;
    state.queue = [];
    // an entry the tree already had still moves the shown sequence on
    if (state.queuedSeq > state.lastSeq) state.lastSeq = state.queuedSeq;
    const wasBottom = view.atBottom();
    let added = 0;
    let usageMoved = false;
    for (const entry of batch) {
      if (!model.add(entry)) continue;
      added++;
      state.newestId = entry.id;
      state.leafId = entry.id;
      if (entry.type === 'session_info' && typeof entry.name === 'string') state.name = entry.name || null;
      if (carriesUsage(entry)) usageMoved = true;
    }
    if (!added) return;
    view.refresh();
    if (wasBottom) {
      view.scrollToBottom();
    } else {
      state.newCount += added;
      newMarker.textContent = `${state.newCount} new`;
      newMarker.hidden = false;
    }
    drawHead();
    drawSources();
    markExportStale();
    if (usageMoved) refreshUsage();
    // entries are immutable: the selected one's JSON and path stay; the
    // default leaf's context moves with the append (a cursor's moves with
    // the cursor: setCursors)
    if (state.source === 'default') {
      clearTimeout(state.ctxTimer);
      state.ctxTimer = setTimeout(() => ctx.track(refreshContext()), 300);
    }
  }

  newMarker.addEventListener('click', () => {
    const id = state.newestId;
    state.newCount = 0;
    newMarker.hidden = true;
    if (id && model.has(id)) {
      model.expandTo(id);
      view.refresh();
      view.reveal(id, true);
    } else {
      view.scrollToBottom();
    }
  });
  scroll.addEventListener('scroll', () => {
    if (!newMarker.hidden && view.atBottom()) { state.newCount = 0; newMarker.hidden = true; }
  }, { passive: true });

  function setLive(s) {
    live.dataset.state = s;
    live.textContent = s === 'reconnecting' ? 'reconnecting…' : s;
  }

  // ---- keyboard ----
  treeEl.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const n = view.length;
    if (!n) return;
    let i = state.selectedId ? view.indexOf(state.selectedId) : -1;
    const node = i >= 0 ? view.at(i) : null;
    const go = (j) => { j = Math.max(0, Math.min(n - 1, j)); const t = view.at(j); if (t) select(t.id, 'key'); };
    switch (e.key) {
      case 'ArrowDown': go(i < 0 ? 0 : i + 1); break;
      case 'ArrowUp': go(i < 0 ? 0 : i - 1); break;
      case 'Home': go(0); break;
      case 'End': go(n - 1); break;
      case 'PageDown': go((i < 0 ? 0 : i) + Math.max(1, Math.floor(scroll.clientHeight / ROW_HEIGHT) - 1)); break;
      case 'PageUp': go((i < 0 ? 0 : i) - Math.max(1, Math.floor(scroll.clientHeight / ROW_HEIGHT) - 1)); break;
      case 'ArrowRight':
        if (!node) { go(0); break; }
        if (node.children.length && model.isCollapsed(node.id)) { model.setCollapsed(node.id, false); view.refresh(); }
        else if (node.children.length) select(node.children[0].id, 'key');
        break;
      case 'ArrowLeft':
        if (!node) { go(0); break; }
        if (node.children.length && !model.isCollapsed(node.id)) { model.setCollapsed(node.id, true); view.refresh(); }
        else if (node.parent) select(node.parent.id, 'key');
        break;
      case 'Enter':
      case ' ':
        if (node) select(node.id, 'enter'); else go(0);
        break;
      default: return;
    }
    e.preventDefault();
  });

  const onDocKey = (e) => {
    if (e.key === 'Escape' && !isTyping(e.target) && state.selectedId && !dialog.open) {
      e.preventDefault();
      clearSelection();
      navigate(sessionHref(sid));
    }
  };
  document.addEventListener('keydown', onDocKey);

  function expandAll() {
    model.collapsed.clear();
    model.version++;
    view.refresh();
  }

  // ---- delete ----
  // Deleting asks first, in a dialog that names the session, and sends the
  // last sequence the page showed when the dialog opened: a session written
  // since is refused (409), not erased unseen.
  const delWhat = el('p', { id: 'delete-what' });
  const delStatus = el('p', { id: 'delete-status', class: 'dialog-status', role: 'alert', hidden: true });
  const delCancel = el('button', { id: 'delete-cancel', type: 'button', class: 'secondary', text: 'Cancel' });
  const delReload = el('button', { id: 'delete-reload', type: 'button', hidden: true, text: 'Reload the session' });
  const delConfirm = el('button', { id: 'delete-confirm', type: 'button', class: 'danger', text: 'Delete permanently' });
  const dialog = el('dialog', { id: 'delete-dialog', class: 'confirm', 'aria-labelledby': 'delete-h' },
    el('h2', { id: 'delete-h', text: 'Delete this session?' }),
    delWhat,
    el('p', { class: 'warn', text: 'It is erased wherever the cluster keeps it: its log records are overwritten, its cursors ' +
      'and archived copies removed, and every node drops it from memory, snapshots and the search index. ' +
      'This cannot be undone.' }),
    delStatus,
    el('div', { class: 'dialog-actions' }, delCancel, delReload, delConfirm));
  main.append(dialog);
  let deleteAt = 0;     // the lastSeq shown when the dialog opened: the delete's expectLastSeq
  let deleting = false;

  function openDelete() {
    deleteAt = state.lastSeq;
    clear(delWhat);
    delWhat.append('Session ', el('strong', { id: 'delete-name', text: state.name || sid }),
      ...(state.name ? [' (', el('code', { text: sid }), ')'] : []),
      `: ${model.size} entries, up to sequence ${deleteAt}.`);
    delStatus.textContent = '';
    delStatus.hidden = true;
    delReload.hidden = true;
    delConfirm.hidden = false;
    delConfirm.disabled = false;
    dialog.showModal();
    delCancel.focus(); // the safe choice is the default one
  }

  async function confirmDelete() {
    if (deleting) return;
    deleting = true;
    delConfirm.disabled = true;
    delStatus.hidden = true;
    try {
      // No abort signal: once sent, the erasure may happen whatever the page does.
      const r = await request('Deleting the session', sessionPath(sid) + qs({ expectLastSeq: deleteAt }),
        { method: 'DELETE', ownForbidden: true });
      if (ac.signal.aborted) return; // the user went elsewhere meanwhile
      dialog.close();
      const what = state.name ? `“${state.name}” (${sid})` : sid;
      ctx.notify(`Deleted session ${what}: ${r.records} records` +
        (r.archivedCopies ? ` and ${r.archivedCopies} archived copies` : '') + ' erased.');
      // replace: Back must not lead to the erased session
      navigate(sessionsHref(), { replace: true });
    } catch (e) {
      if (ac.signal.aborted) return;
      delStatus.textContent = deleteFailure(e);
      delStatus.hidden = false;
      if (e.status === 409) {
        delConfirm.hidden = true;
        delReload.hidden = false;
        delReload.focus();
      } else {
        delConfirm.disabled = false;
      }
    } finally {
      deleting = false;
    }
  }

  function deleteFailure(e) {
    if (e.status === 409) {
      return `The session changed after this page showed it: its last sequence is now ${e.lastSeq ?? 'higher'}, ` +
        `not ${deleteAt}. Nothing was deleted. Reload it to see what changed, then decide again.`;
    }
    if (e.status === 403) {
      return `This token may not delete sessions (403 ${e.code || 'forbidden'}): deleting needs a token with the ` +
        'write scope. Nothing was deleted.';
    }
    return e.message || String(e);
  }

  deleteB.addEventListener('click', openDelete);
  delCancel.addEventListener('click', () => dialog.close());
  delConfirm.addEventListener('click', () => ctx.track(confirmDelete()));
  delReload.addEventListener('click', () => { dialog.close(); ctx.reload(); });

  // ---- load ----
  async function load() {
    const info = await getJSON('Loading the session', sessionPath(sid) + qs({ include: 'usage' }), ac.signal);
    state.info = info;
    state.lastSeq = info.lastSeq ?? 0;
    state.leafId = info.leafId ?? null;
    state.name = info.name ?? null;
    drawHead();
    drawUsage(info.usageBreakdown);
    ctx.track(loadForks()); // beside the tree: the head's line, not the tree, waits for it
    const [tree, cursors] = await Promise.all([
      getJSON('Loading the tree', sessionPath(sid) + '/tree' + qs({ include: 'entries' }), ac.signal),
      getJSON('Reading the cursors', sessionPath(sid) + '/cursors', ac.signal).catch((e) => {
        if (isAbort(e)) throw e;
        ctx.showError(e);
        return { cursors: [] };
      }),
      fetchExport().catch((e) => {
        if (isAbort(e)) throw e;
        ctx.showError(e);
        exportA.removeAttribute('aria-disabled'); // to try again when used
        exportA.setAttribute('tabindex', '0');
        markStale(exportA, true);
      }),
    ]);
    model.load(tree.tree || []);
    // the tree's leaf: an append between get and tree moved it
    if (tree.leafId !== undefined) state.leafId = tree.leafId;
    // tree's labels are authoritative; get's labels fill any gap
    if (info.labels) for (const [id, label] of Object.entries(info.labels)) {
      const n = model.get(id);
      if (n && !n.label) n.label = label;
    }
    view.refresh();
    setCursors(cursors.cursors || []);
    drawHead();
    drawSources();
    drawEntry();
    if (wantedEid) {
      if (model.has(wantedEid)) select(wantedEid, 'url');
      else { ctx.showError(`Entry ${wantedEid} is not in session ${sid}.`); scheduleContext(0); }
    } else {
      scheduleContext(0);
    }
    // follow the session from what get reflected; entries the tree already
    // holds are skipped by id
    state.watch = new Watch(sid, info.lastSeq, {
      onEntry,
      onState: setLive,
      onError: (e) => ctx.showError(e),
    });
    state.watch.start();
    state.pollTimer = setInterval(pollCursors, 2000);
    deleteB.disabled = false;
  }

  ctx.track(load().catch((e) => {
    if (isAbort(e)) return;
    state.gone = true;
    title.textContent = sid;
    ctx.showError(e);
  }));

  return {
    update(r) {
      wantedEid = r.eid;
      if (r.eid && r.eid !== state.selectedId) { if (model.size) select(r.eid, 'url'); }
      else if (!r.eid && state.selectedId) clearSelection();
    },
    unmount() {
      ac.abort();
      if (dialog.open) dialog.close();
      if (state.ctxCtrl) state.ctxCtrl.abort();
      if (state.watch) state.watch.stop();
      clearInterval(state.pollTimer);
      clearTimeout(state.ctxTimer);
      clearTimeout(state.flushTimer);
      clearTimeout(state.usageTimer);
      document.removeEventListener('visibilitychange', onVisible);
      document.removeEventListener('keydown', onDocKey);
      view.destroy();
      if (state.exportUrl) URL.revokeObjectURL(state.exportUrl);
      if (state.branchUrl) URL.revokeObjectURL(state.branchUrl);
    },
  };
}

// carriesUsage: an entry that pi 1.1's usage breakdown counts.
function carriesUsage(entry) {
  if (!entry) return false;
  if (entry.type === 'usage') return true;
  const u = entry.type === 'message' ? entry.message && entry.message.usage : entry.usage;
  return !!u;
}
