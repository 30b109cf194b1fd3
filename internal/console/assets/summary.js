// summary.js — one-line descriptions of pi entries and messages.

const MAX = 240;

function oneLine(s) {
  return String(s).replace(/\s+/g, ' ').trim();
}

function clip(s, n = MAX) {
  s = oneLine(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// firstText of a content (a string or an array of parts).
export function firstText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  for (const p of content) {
    if (p && p.type === 'text' && typeof p.text === 'string' && p.text.trim()) return p.text;
  }
  return '';
}

// entryType is the row's data-type: a message's role, else the entry's type.
export function entryType(entry) {
  if (!entry) return 'unknown';
  if (entry.type === 'message' && entry.message && entry.message.role) return String(entry.message.role);
  return String(entry.type || 'unknown');
}

function assistantSummary(m) {
  const parts = Array.isArray(m.content) ? m.content : [];
  const text = firstText(parts);
  const calls = parts.filter((p) => p && p.type === 'toolCall').map((p) => p.name);
  let s = text;
  if (!s && !calls.length) {
    const th = parts.find((p) => p && p.type === 'thinking' && p.thinking);
    if (th) s = `(thinking) ${th.thinking}`;
  }
  if (calls.length) s = (s ? s + ' ' : '') + `→ ${calls.join(', ')}`;
  if (!s && m.errorMessage) s = `error: ${m.errorMessage}`;
  if (!s && m.stopReason) s = `(${m.stopReason})`;
  return s || '(empty)';
}

function messageSummary(m) {
  switch (m.role) {
    case 'user': {
      const t = firstText(m.content);
      if (t) return t;
      if (Array.isArray(m.content) && m.content.some((p) => p && p.type === 'image')) return '(image)';
      return '(empty)';
    }
    case 'assistant': return assistantSummary(m);
    case 'toolResult': {
      const t = firstText(m.content);
      return `${m.toolName || 'tool'}${m.isError ? ' (error)' : ''}${t ? ': ' + t : ''}`;
    }
    case 'bashExecution': return `$ ${m.command || ''}${m.exitCode !== undefined && m.exitCode !== null ? ` (exit ${m.exitCode})` : ''}`;
    case 'custom': {
      const t = firstText(m.content);
      return `${m.customType || 'custom'}${t ? ': ' + t : ''}`;
    }
    case 'branchSummary': return `branch summary: ${m.summary || ''}`;
    case 'compactionSummary': return `compaction summary: ${m.summary || ''}`;
    case 'system': return systemSummary(m);
    default: return firstText(m.content) || m.role || 'message';
  }
}

// toolNames lists the names of a system message's tool declarations.
function toolNames(tools) {
  return Array.isArray(tools) ? tools.map((t) => (t && t.name) || '?').join(', ') : '';
}

// systemSummary: pi 1.1's system message — what it changes of the prompt
// (content appended, sections set or removed) and of the tools.
function systemSummary(m) {
  const parts = [];
  const t = typeof m.content === 'string' ? m.content : firstText(m.content);
  if (t) parts.push(t);
  const secs = m.sections && typeof m.sections === 'object' ? Object.entries(m.sections) : [];
  const set = secs.filter(([, v]) => v !== null).map(([k]) => k);
  const gone = secs.filter(([, v]) => v === null).map(([k]) => k);
  if (set.length) parts.push(`sections ${set.join(', ')}`);
  if (gone.length) parts.push(`− sections ${gone.join(', ')}`);
  if (toolNames(m.toolsAdded)) parts.push(`+ tools ${toolNames(m.toolsAdded)}`);
  if (toolNames(m.toolsRemoved)) parts.push(`− tools ${toolNames(m.toolsRemoved)}`);
  return `system: ${parts.join(' · ') || '(empty)'}`;
}

// usageText: a pi-ai Usage as tokens and cost.
export function usageText(u) {
  if (!u || typeof u !== 'object') return '';
  const tok = ['input', 'output', 'cacheRead', 'cacheWrite'].reduce((n, k) => n + (Number(u[k]) || 0), 0);
  const cost = u.cost && Number(u.cost.total);
  return `${tok} tokens${cost ? ` · $${cost.toFixed(4)}` : ''}`;
}

// summarize an entry on one line.
export function summarize(entry) {
  if (!entry) return '';
  let s;
  switch (entry.type) {
    case 'message': s = entry.message ? messageSummary(entry.message) : 'message'; break;
    case 'model_change': s = `model → ${entry.provider}/${entry.modelId}`; break;
    case 'thinking_level_change': s = `thinking → ${entry.thinkingLevel}`; break;
    case 'compaction': {
      const sum = entry.summary ? ' ' + clip(entry.summary, 120) : '';
      s = `compaction (kept from ${entry.firstKeptEntryId || '—'})${sum}`;
      break;
    }
    case 'branch_summary': s = `branch summary: ${entry.summary || ''}`; break;
    case 'label': s = entry.label !== undefined && entry.label !== null && entry.label !== ''
      ? `label “${entry.label}” on ${entry.targetId}` : `label cleared on ${entry.targetId}`; break;
    case 'session_info': s = `name: ${entry.name ?? ''}`; break;
    case 'custom': s = `custom: ${entry.customType || ''}`; break;
    case 'custom_message': {
      const t = firstText(entry.content);
      s = `${entry.customType || 'custom_message'}${t ? ': ' + t : ''}`;
      break;
    }
    case 'context_edit': {
      const r = entry.replacement;
      const t = r && (typeof r.content === 'string' ? r.content : firstText(r.content));
      s = r === null || r === undefined ? `edit of ${entry.targetId}: left out of the context`
        : `edit of ${entry.targetId}: replaced${t ? ' with “' + clip(t, 120) + '”' : ''}`;
      break;
    }
    case 'usage': {
      const note = entry.note ? ` (${entry.note})` : '';
      s = `usage ${entry.kind || ''}: ${entry.provider || ''}/${entry.model || ''} · ${usageText(entry.usage)}${note}`;
      break;
    }
    default: s = entry.type || 'entry';
  }
  return clip(s);
}

// messageText renders a context message's content as plain text.
export function messageText(m) {
  if (!m) return '';
  const parts = [];
  const add = (c) => {
    if (typeof c === 'string') { parts.push(c); return; }
    if (!Array.isArray(c)) return;
    for (const p of c) {
      if (!p) continue;
      if (p.type === 'text') parts.push(p.text || '');
      else if (p.type === 'thinking') parts.push(`[thinking] ${p.thinking || ''}`);
      else if (p.type === 'toolCall') parts.push(`[tool call ${p.name}] ${JSON.stringify(p.arguments ?? {})}`);
      else if (p.type === 'image') parts.push(`[image ${p.mimeType || ''}]`);
      else parts.push(`[${p.type}]`);
    }
  };
  switch (m.role) {
    case 'compactionSummary':
    case 'branchSummary':
      parts.push(m.summary || '');
      break;
    case 'bashExecution':
      parts.push(`$ ${m.command || ''}\n${m.output || ''}`);
      break;
    case 'toolResult':
      parts.push(`[${m.toolName || 'tool'}${m.isError ? ', error' : ''}]`);
      add(m.content);
      break;
    case 'system': {
      add(m.content);
      for (const [k, v] of Object.entries(m.sections && typeof m.sections === 'object' ? m.sections : {})) {
        parts.push(v === null ? `[section ${k} removed]` : `[section ${k}]\n${v}`);
      }
      if (toolNames(m.toolsAdded)) parts.push(`[tools added] ${toolNames(m.toolsAdded)}`);
      if (toolNames(m.toolsRemoved)) parts.push(`[tools removed] ${toolNames(m.toolsRemoved)}`);
      break;
    }
    default:
      add(m.content);
  }
  const s = parts.join('\n');
  return s.length > 4000 ? s.slice(0, 4000) + '…' : s;
}

export function tokens(m) {
  return Math.ceil(JSON.stringify(m).length / 4);
}
