// dom.js — small DOM helpers.

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtBytes(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

// isTyping: the keyboard focus is in a text field.
export function isTyping(target) {
  const t = target || document.activeElement;
  if (!t) return false;
  const tag = t.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || t.isContentEditable;
}

const UUID_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

// parentSessionId finds the session id in a header's parentSession (pi
// writes the parent's file path, whose name ends with its id).
export function parentSessionId(parentSession) {
  if (!parentSession || typeof parentSession !== 'string') return null;
  const m = parentSession.match(UUID_RE);
  return m ? m[m.length - 1] : null;
}

// shortId is how a link to another session shows its id: the last 12
// digits (a UUIDv7 starts with its time, so ids of the same minute — a
// session's forks, most often — share their first 8); the full id goes in
// the link's title.
export function shortId(id) {
  return '…' + id.slice(-12);
}

// forkTitle names a fork's parent in full: its id, and pi's path to its
// file when the header has one.
export function forkTitle(parent, parentSession) {
  return parentSession === parent ? parent : `${parent}\n${parentSession}`;
}
