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
    default: return firstText(m.content) || m.role || 'message';
  }
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
    default:
      add(m.content);
  }
  const s = parts.join('\n');
  return s.length > 4000 ? s.slice(0, 4000) + '…' : s;
}

export function tokens(m) {
  return Math.ceil(JSON.stringify(m).length / 4);
}
