// context.js — what pi would send the model at a leaf: the agent messages
// and the LLM messages side by side, with sizes and the compaction cut.

import { getText, qs, sessionPath } from './api.js';
import { clear, el } from './dom.js';
import { messageText, tokens } from './summary.js';

// loadContext fetches both formats of the context for source
// ({leaf} or {client}, or {} for the default leaf). Returns raw texts.
export async function loadContext(sid, source, signal) {
  const base = sessionPath(sid) + '/context';
  const p = {};
  if (source.client) p.client = source.client;
  else if (source.leaf !== undefined) p.leaf = source.leaf === null ? 'null' : source.leaf;
  const [agent, llm] = await Promise.all([
    getText('Loading the context', base + qs(p), signal),
    getText('Loading the LLM context', base + qs({ ...p, format: 'llm' }), signal),
  ]);
  return { agent, llm };
}

function drawColumn(col, title, reply, cut) {
  clear(col);
  const msgs = Array.isArray(reply.messages) ? reply.messages : [];
  const sizes = msgs.map(tokens); // each message's, once: a JSON.stringify each
  const total = sizes.reduce((n, t) => n + t, 0);
  col.append(el('h3', null, title, el('span', { class: 'col-total', text: ` · ${msgs.length} messages · ≈${total} tokens` })));
  if (!msgs.length) col.append(el('p', { class: 'empty', text: 'No messages.' }));
  const draw = (m, i) => {
    const role = m && m.role ? String(m.role) : 'unknown';
    const div = el('div', { class: 'message', dataset: { role } },
      el('div', { class: 'message-head' },
        el('span', { class: 'role', text: role }),
        m && m.model ? el('span', { class: 'model', text: `${m.provider || ''}/${m.model}` }) : null,
        el('span', { class: 'size', title: 'about the characters of its JSON / 4' },
          '≈', el('span', { class: 'tokens', dataset: { tokens: String(sizes[i]) }, text: String(sizes[i]) }), ' tok')),
      el('div', { class: 'message-body', text: messageText(m) }));
    const out = [div];
    if (cut && i === cut.at) {
      div.classList.add('compacted');
      out.push(el('div', { class: 'cut', role: 'separator', text: cut.text }));
    }
    return out;
  };
  // A long context (thousands of messages on a long branch) is drawn as
  // its start and its end, the middle on request: all of it at once would
  // be tens of thousands of elements for the page to lay out.
  if (msgs.length <= contextHead + contextTail + 10) {
    msgs.forEach((m, i) => col.append(...draw(m, i)));
    return;
  }
  msgs.slice(0, contextHead).forEach((m, i) => col.append(...draw(m, i)));
  const middle = msgs.length - contextHead - contextTail;
  const more = el('button', { class: 'more-messages', type: 'button', text: `Show the ${middle} messages in between` });
  more.addEventListener('click', () => {
    const frag = document.createDocumentFragment();
    msgs.slice(contextHead, contextHead + middle).forEach((m, k) => frag.append(...draw(m, contextHead + k)));
    more.replaceWith(frag);
  });
  col.append(more);
  msgs.slice(msgs.length - contextTail).forEach((m, k) => col.append(...draw(m, msgs.length - contextTail + k)));
}

// contextHead and contextTail are the messages of a long context drawn
// at first: where it starts (the compaction summary, the first question)
// and what the model saw last.
const contextHead = 50;
const contextTail = 100;

// drawContext renders the two replies into the context section; Raw
// replies shows their text as the API sent it (big integers and escapes
// exact, which a JSON.parse and stringify would not keep).
export function drawContext(section, raw, model) {
  const agent = JSON.parse(raw.agent);
  const llm = JSON.parse(raw.llm);
  section.querySelector('#context-json').textContent = raw.agent;
  section.querySelector('#context-llm-json').textContent = raw.llm;

  // the compaction cut: the context starts with the summary of the newest
  // compaction on the path; what is before it was summarised away.
  let cut = null;
  const msgs = Array.isArray(agent.messages) ? agent.messages : [];
  const path = Array.isArray(agent.path) ? agent.path : [];
  let compaction = null;
  for (let i = path.length - 1; i >= 0; i--) {
    const n = model.get(path[i]);
    if (n && n.entry.type === 'compaction') { compaction = n.entry; break; }
  }
  // pi 1.1 puts the compaction's checkpoint of the system prompt first.
  const at = msgs.length && msgs[0].role === 'system' ? 1 : 0;
  if (msgs[at] && msgs[at].role === 'compactionSummary') {
    const kept = compaction && compaction.firstKeptEntryId === compaction.id ? 'keeping nothing before it'
      : `kept from ${(compaction && compaction.firstKeptEntryId) || '—'}`;
    cut = {
      at,
      text: '✂ compaction cut: the history before this point is replaced by the summary above' +
        (compaction ? ` (compaction ${compaction.id}, ${kept}, ${compaction.tokensBefore ?? '?'} tokens before)` : ''),
    };
  }
  // pi 1.1's context edits on the path: the latest per target applies.
  const edits = new Map();
  for (const id of path) {
    const n = model.get(id);
    if (n && n.entry.type === 'context_edit' && n.entry.targetId) edits.set(n.entry.targetId, n.entry);
  }
  const editNote = [...edits.values()].map((e) => `${e.targetId} ${e.replacement == null ? 'left out' : 'replaced'}`).join(', ');
  const info = section.querySelector('#context-info');
  clear(info);
  info.append(...[
    el('span', { text: `leaf ${agent.leafId ?? 'null'}` }),
    el('span', { text: `model ${agent.model ? `${agent.model.provider}/${agent.model.modelId}` : '—'}` }),
    el('span', { text: `thinking ${agent.thinkingLevel ?? '—'}` }),
    el('span', { text: `${path.length} entries on the path` }),
    compaction ? el('span', { class: 'cut-note', text: `compaction ${compaction.id} on the path` }) : null,
    edits.size ? el('span', { class: 'edit-note', title: 'context_edit entries on the path: the model sees these entries replaced or not at all (when the edit is in the context\'s range)', text: `${edits.size} edited: ${editNote}` }) : null,
  ].filter(Boolean));
  drawColumn(section.querySelector('#context-agent'), 'Agent messages', agent, cut);
  drawColumn(section.querySelector('#context-llm'), 'LLM messages', llm, cut);
}

export function clearContext(section, note) {
  for (const id of ['#context-agent', '#context-llm', '#context-info']) clear(section.querySelector(id));
  section.querySelector('#context-json').textContent = '';
  section.querySelector('#context-llm-json').textContent = '';
  if (note) section.querySelector('#context-info').append(el('span', { text: note }));
}
