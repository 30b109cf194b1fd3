// tree.js — the session tree: a model built from pi's getTree nodes (and
// entries arriving live), flattened to the visible rows, drawn virtualised.

import { el } from './dom.js';
import { entryType, summarize } from './summary.js';

export const ROW_HEIGHT = 24;
const OVERSCAN = 12;

function tsOf(entry) {
  const t = Date.parse(entry && entry.timestamp);
  return Number.isNaN(t) ? 0 : t;
}

// TreeModel holds every entry as a node {id, entry, label, parent, children}.
export class TreeModel {
  constructor() {
    this.nodes = new Map();
    this.roots = [];
    this.collapsed = new Set();
    this.edits = new Map(); // target id -> how many context_edit entries name it
    this.version = 0;
  }

  // noteEdit counts a pi 1.1 context_edit against its target.
  noteEdit(entry) {
    if (entry && entry.type === 'context_edit' && entry.targetId) {
      this.edits.set(entry.targetId, (this.edits.get(entry.targetId) || 0) + 1);
    }
  }

  // editCount: the context edits of id (on any branch).
  editCount(id) { return this.edits.get(id) || 0; }

  // load pi's getTree() nodes ({entry, label?, children}), iteratively.
  load(tree) {
    this.nodes.clear();
    this.roots = [];
    this.edits.clear();
    const stack = [];
    for (let i = tree.length - 1; i >= 0; i--) stack.push([tree[i], null]);
    while (stack.length) {
      const [t, parent] = stack.pop();
      const entry = t.entry || {};
      const node = { id: entry.id, entry, label: t.label ?? null, parent, children: [] };
      this.nodes.set(node.id, node);
      this.noteEdit(entry);
      if (parent) parent.children.push(node); else this.roots.push(node);
      const kids = t.children || [];
      for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], node]);
    }
    this.version++;
  }

  has(id) { return this.nodes.has(id); }
  get(id) { return this.nodes.get(id); }
  get size() { return this.nodes.size; }

  // add an entry that arrived live; false when it is known already.
  add(entry) {
    if (!entry || !entry.id || this.nodes.has(entry.id)) return false;
    const parent = entry.parentId ? this.nodes.get(entry.parentId) || null : null;
    const node = { id: entry.id, entry, label: null, parent, children: [] };
    this.nodes.set(node.id, node);
    const list = parent ? parent.children : this.roots;
    if (parent) {
      // children by timestamp, as pi's getTree sorts them
      const t = tsOf(entry);
      let i = list.length;
      while (i > 0 && tsOf(list[i - 1].entry) > t) i--;
      list.splice(i, 0, node);
    } else {
      list.push(node);
    }
    if (entry.type === 'label' && entry.targetId) {
      const target = this.nodes.get(entry.targetId);
      if (target) target.label = entry.label ? entry.label : null;
    }
    this.noteEdit(entry);
    this.version++;
    return true;
  }

  // path from the root to id (ids), walking parentId.
  path(id) {
    const out = [];
    let n = this.nodes.get(id);
    while (n) { out.push(n); n = n.parent; }
    return out.reverse();
  }

  isCollapsed(id) { return this.collapsed.has(id); }

  setCollapsed(id, on) {
    if (on) this.collapsed.add(id); else this.collapsed.delete(id);
    this.version++;
  }

  // expandTo opens every collapsed ancestor of id.
  expandTo(id) {
    let n = this.nodes.get(id);
    let changed = false;
    for (n = n && n.parent; n; n = n.parent) {
      if (this.collapsed.delete(n.id)) changed = true;
    }
    if (changed) this.version++;
  }

  // flatten to the visible rows, depth-first, like pi's /tree: the
  // indentation grows only under a node with more than one child.
  flatten() {
    const rows = [];
    const stack = [];
    for (let i = this.roots.length - 1; i >= 0; i--) stack.push([this.roots[i], 0]);
    while (stack.length) {
      const [node, depth] = stack.pop();
      rows.push({ node, depth });
      if (!node.children.length || this.collapsed.has(node.id)) continue;
      const d = node.children.length > 1 ? depth + 1 : depth;
      for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], d]);
    }
    return rows;
  }
}

// TreeView draws the model's visible rows into #tree inside #tree-scroll.
export class TreeView {
  constructor(scroll, tree, model, opts) {
    this.scroll = scroll;
    this.tree = tree;
    this.model = model;
    this.opts = opts; // {onSelect(id, how), marks(): {leafId, cursors: Map id->[client]}, selectedId()}
    this.rows = [];
    this.index = new Map();
    this.rendered = new Map(); // row index -> element
    this.flatVersion = -1;
    this.drawVersion = 0;
    this.drawnVersion = -1;
    this.frame = 0;
    this.onScroll = () => this.schedule();
    scroll.addEventListener('scroll', this.onScroll, { passive: true });
    this.resizeObs = new ResizeObserver(() => this.schedule());
    this.resizeObs.observe(scroll);
    tree.addEventListener('click', (e) => this.click(e));
  }

  destroy() {
    this.scroll.removeEventListener('scroll', this.onScroll);
    this.resizeObs.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
  }

  // reflatten when the model changed (tree or collapse state), keeping the
  // first visible row where it was on screen.
  refresh() {
    if (this.flatVersion === this.model.version) { this.invalidate(); return; }
    const anchorIdx = Math.floor(this.scroll.scrollTop / ROW_HEIGHT);
    const anchor = this.rows[anchorIdx];
    const offset = this.scroll.scrollTop - anchorIdx * ROW_HEIGHT;
    this.rows = this.model.flatten();
    this.index = new Map();
    for (let i = 0; i < this.rows.length; i++) this.index.set(this.rows[i].node.id, i);
    this.flatVersion = this.model.version;
    this.tree.style.height = `${this.rows.length * ROW_HEIGHT}px`;
    if (anchor && this.index.has(anchor.node.id) && this.scroll.scrollTop > 0) {
      const top = this.index.get(anchor.node.id) * ROW_HEIGHT + offset;
      if (Math.abs(top - this.scroll.scrollTop) >= 1) this.scroll.scrollTop = top;
    }
    this.invalidate();
  }

  // invalidate redraws the visible rows (marks, selection changed).
  invalidate() {
    this.drawVersion++;
    this.draw();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  atBottom() {
    const s = this.scroll;
    return s.scrollTop + s.clientHeight >= s.scrollHeight - ROW_HEIGHT;
  }

  scrollToBottom() {
    this.scroll.scrollTop = this.scroll.scrollHeight;
    this.draw();
  }

  // reveal scrolls row id into view.
  reveal(id, center = false) {
    const i = this.index.get(id);
    if (i === undefined) return;
    const top = i * ROW_HEIGHT;
    const s = this.scroll;
    const h = s.clientHeight || ROW_HEIGHT * 20;
    if (center) s.scrollTop = Math.max(0, top - h / 2);
    else if (top < s.scrollTop) s.scrollTop = top;
    else if (top + ROW_HEIGHT > s.scrollTop + h) s.scrollTop = top + ROW_HEIGHT - h;
    this.draw();
  }

  draw() {
    const s = this.scroll;
    const h = s.clientHeight || ROW_HEIGHT * 30;
    const first = Math.max(0, Math.floor(s.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.rows.length - 1, Math.ceil((s.scrollTop + h) / ROW_HEIGHT) + OVERSCAN);
    const full = this.drawnVersion !== this.drawVersion;
    for (const [i, e] of this.rendered) {
      if (full || i < first || i > last) { e.remove(); this.rendered.delete(i); }
    }
    const marks = this.opts.marks();
    const sel = this.opts.selectedId();
    const frag = document.createDocumentFragment();
    for (let i = first; i <= last; i++) {
      if (this.rendered.has(i)) continue;
      const e = this.row(i, marks, sel);
      this.rendered.set(i, e);
      frag.append(e);
    }
    this.tree.append(frag);
    this.drawnVersion = this.drawVersion;
    const selEl = sel ? this.tree.querySelector(`.row[aria-selected="true"]`) : null;
    if (selEl) this.tree.setAttribute('aria-activedescendant', selEl.id);
    else this.tree.removeAttribute('aria-activedescendant');
  }

  row(i, marks, sel) {
    const { node, depth } = this.rows[i];
    const entry = node.entry;
    const type = entryType(entry);
    const hasKids = node.children.length > 0;
    const collapsed = hasKids && this.model.isCollapsed(node.id);
    const e = el('div', {
      class: 'row' + (node.id === marks.leafId ? ' on-leaf' : ''),
      role: 'treeitem',
      id: `row-${node.id}`,
      'aria-level': depth + 1,
      'aria-selected': node.id === sel ? 'true' : 'false',
      'aria-expanded': hasKids ? String(!collapsed) : null,
      dataset: { id: node.id, depth: String(depth), type },
    });
    e.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
    e.style.paddingLeft = `${4 + depth * 16}px`;
    if (hasKids) {
      e.append(el('span', { class: 'toggle', 'aria-hidden': 'true', title: collapsed ? 'expand' : 'collapse',
        text: collapsed ? '▸' : '▾' }));
    } else {
      e.append(el('span', { class: 'toggle-space', 'aria-hidden': 'true' }));
    }
    if (node.children.length > 1) e.classList.add('branch');
    e.append(el('span', { class: `kind kind-${type}`, text: kindLabel(type) }));
    e.append(el('span', { class: 'summary', text: summarize(entry) }));
    if (collapsed) e.append(el('span', { class: 'hidden-count', text: `+${countBelow(node)}` }));
    if (node.label) e.append(el('span', { class: 'label', text: node.label }));
    const edits = this.model.editCount(node.id);
    if (edits) {
      e.append(el('span', { class: 'edited', title: `${edits} context edit${edits > 1 ? 's' : ''}: on the branches ${edits > 1 ? 'they are' : 'it is'} on, the model sees this entry replaced or not at all`, text: 'edited' }));
    }
    if (node.id === marks.leafId) e.append(el('span', { class: 'leaf-mark', title: 'default leaf', text: 'leaf' }));
    const cs = marks.cursors.get(node.id);
    if (cs) for (const c of cs) e.append(el('span', { class: 'cursor', dataset: { client: c }, title: `cursor of ${c}`, text: c }));
    e.append(el('span', { class: 'eid', text: node.id }));
    return e;
  }

  click(ev) {
    const row = ev.target.closest('.row');
    if (!row) return;
    const id = row.dataset.id;
    if (ev.target.closest('.toggle')) {
      this.model.setCollapsed(id, !this.model.isCollapsed(id));
      this.refresh();
      return;
    }
    this.opts.onSelect(id, 'click');
  }

  // neighbours for the keyboard
  indexOf(id) { return this.index.has(id) ? this.index.get(id) : -1; }
  at(i) { return this.rows[i] ? this.rows[i].node : null; }
  get length() { return this.rows.length; }
}

function countBelow(node) {
  let n = 0;
  const stack = [...node.children];
  while (stack.length) { const c = stack.pop(); n++; for (const k of c.children) stack.push(k); }
  return n;
}

const KIND = {
  user: 'user', assistant: 'asst', toolResult: 'tool', bashExecution: 'bash', custom: 'cust',
  branchSummary: 'bsum', compactionSummary: 'csum', branch_summary: 'branch', compaction: 'compact',
  model_change: 'model', thinking_level_change: 'think', label: 'label', session_info: 'info',
  custom_message: 'cmsg', system: 'sys', context_edit: 'edit', usage: 'usage',
};

// kindLabel is the short name of a row's kind (its data-type).
export function kindLabel(type) { return KIND[type] || type.slice(0, 7); }
