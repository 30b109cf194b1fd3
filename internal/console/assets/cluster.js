// cluster.js — the node's status (GET /v1/status), refreshed every 2 s
// while the tab is visible.

import { getJSON, isAbort } from './api.js';
import { clear, el, fmtBytes, fmtTime } from './dom.js';

const EVERY = 2000;

function table(id, caption, head, rows) {
  return el('table', { id, class: 'grid' },
    el('caption', { text: caption }),
    el('thead', null, el('tr', null, head.map((h) => el('th', { scope: 'col', class: h.num ? 'num' : null, text: h.t })))),
    el('tbody', null, rows.map((r) => el('tr', { dataset: r.data || {} },
      r.cells.map((c, i) => el('td', { class: [head[i] && head[i].num ? 'num' : '', head[i] && head[i].cls || ''].join(' ').trim() || null }, c ?? ''))))));
}

const n = (v) => (v === undefined || v === null ? '—' : String(v));

function buildText(b) {
  if (!b) return '—';
  return `${b.version || '?'} (${(b.revision || '?').slice(0, 12)}${b.modified ? ', modified' : ''}) ${b.go || ''}`.trim();
}

export function mountCluster(main, route, ctx) {
  const ac = new AbortController();
  let timer = 0;
  let stopped = false;
  let first = true;

  const updated = el('span', { id: 'cluster-updated', role: 'status', text: 'loading…' });
  const body = el('div', { class: 'cluster-body' });
  main.append(el('div', { class: 'cluster-view' },
    el('div', { class: 'section-head' }, el('h1', { text: 'Cluster' }), updated),
    body));
  document.title = 'Cluster · pi console';

  function draw(s) {
    clear(body);
    const st = s.store || {};
    const js = s.jetstream;
    if (Array.isArray(s.insecure) && s.insecure.length) {
      body.append(el('div', { class: 'warn', role: 'note' }, el('strong', { text: 'Insecure: ' }), s.insecure.join(' ')));
    }
    body.append(table('nodes', 'Node answering', [
      { t: 'Node' }, { t: 'Build' }, { t: 'API' }, { t: 'Applied', num: true }, { t: 'Log last seq', num: true },
      { t: 'Lag', num: true }, { t: 'Caught up at' }, { t: 'Sessions', num: true }, { t: 'Loaded', num: true }, { t: 'Held' },
    ], [{ data: { node: s.node || '' }, cells: [
      s.node, buildText(s.build), s.version, n(st.applied), n(st.logLastSeq), n(st.lag),
      st.caughtUpAt ? fmtTime(st.caughtUpAt) : 'never', n(st.sessions), n(st.sessionsLoaded), fmtBytes(st.bytesHeld),
    ] }]));
    if (st.lastFollowError) body.append(el('p', { class: 'warn', text: `Last follow error: ${st.lastFollowError}` }));

    const shards = Array.isArray(st.shards) && st.shards.length ? st.shards
      : [{ shard: 0, applied: st.applied, logLastSeq: st.logLastSeq, lag: st.lag, sessions: st.sessions, bytesHeld: st.bytesHeld, holding: '' }];
    body.append(table('shards', 'Store shards', [
      { t: 'Shard', num: true }, { t: 'Applied', num: true }, { t: 'Log last seq', num: true }, { t: 'Lag', num: true },
      { t: 'Sessions', num: true }, { t: 'Held' }, { t: 'Holding' },
    ], shards.map((sh) => ({ data: { shard: String(sh.shard) }, cells: [
      n(sh.shard), n(sh.applied), n(sh.logLastSeq), n(sh.lag), n(sh.sessions), fmtBytes(sh.bytesHeld), sh.holding || 'serving',
    ] }))));

    // cluster: where the data lives, for any token; jetstream: how to
    // reach and configure it, for admin tokens only (docs/API.md, status).
    const cl = s.cluster;
    if (js && js.error && !js.stream) {
      body.append(el('p', { class: 'warn', text: `JetStream: ${js.error}` }));
    }
    if (!cl) {
      body.append(el('p', { id: 'cluster-note', class: 'note', role: 'note',
        text: 'The node could not ask JetStream where the streams’ leaders and replicas are; the node’s own status is above.' }));
      return;
    }
    if (js && !js.error) {
      body.append(el('p', { class: 'info' },
        el('span', { text: `server ${js.server || '—'}` }),
        js.cluster ? el('span', { text: `cluster ${js.cluster}` }) : null,
        el('span', { text: `connected ${js.connected || '—'}` }),
        el('span', { text: `cursor bucket ${js.bucket || '—'}` }),
        js.shardMap ? el('span', { text: `shard map ${js.shardMap}` }) : null,
        js.region ? el('span', { text: `region ${js.region.region} (${js.region.role}, home ${js.region.home})` }) : null));
    }
    const streams = Array.isArray(cl.streams) ? cl.streams : [];
    body.append(table('streams', `Session streams (${cl.mode || '—'})`, [
      { t: 'Stream' }, { t: 'Replicas', num: true }, { t: 'Leader', cls: 'leader' }, { t: 'Messages', num: true }, { t: 'Bytes', num: true },
      { t: 'Last seq', num: true }, { t: 'Followers (current / lag)' },
    ], streams.map((x) => ({ data: { stream: x.name || '' }, cells: [
      x.name, n(x.replicas), x.leader || '—', n(x.messages), fmtBytes(x.bytes), n(x.lastSeq),
      (x.followers || []).length ? el('ul', { class: 'followers' }, x.followers.map((f) => el('li', {
        class: { offline: 'bad', current: 'ok' }[followerState(f)] || 'warn',
        text: `${f.name}: ${followerState(f)} / lag ${n(f.lag)}${f.lastSeen ? ` (seen ${f.lastSeen === 'never' ? 'never since the election' : f.lastSeen})` : ''}`,
      }))) : '—',
    ] }))));
    if (Array.isArray(cl.members) && cl.members.length) {
      body.append(table('members', `Members (hold ${n(cl.hold)})`, [{ t: 'Node' }, { t: 'Held shards' }, { t: 'Ready shards' }],
        cl.members.map((m) => ({ data: { node: m.node }, cells: [m.node, (m.held || []).join(', '), (m.ready || []).join(', ')] }))));
    }
  }

  // The node's judgement (current, lagging or offline, the bound /readyz
  // keeps); the leader's raw flags only from a node that sends none.
  function followerState(f) {
    return f.state || (f.offline ? 'offline' : (f.current ? 'current' : 'behind'));
  }

  async function poll() {
    try {
      const s = await getJSON('Reading the node status', '/v1/status', ac.signal);
      if (stopped) return;
      draw(s);
      // fmtTime, as every time the console shows: one 24-hour format, not
      // the locale's clock (a 12-hour one in en-US).
      const at = new Date().toISOString();
      updated.textContent = `updated ${fmtTime(at)}`;
      updated.dataset.at = at;
      ctx.clearError();
    } catch (e) {
      if (isAbort(e) || stopped) return;
      ctx.showError(e);
      if (e.isAuth) { stopped = true; return; }
    }
  }

  // A hidden tab is not polled (the timer goes on); it polls at once when
  // shown again. timer is 0 while a round is under way.
  async function loop() {
    timer = 0;
    if (document.visibilityState === 'visible') {
      const p = poll();
      if (first) { first = false; ctx.track(p); }
      await p;
    }
    if (!stopped) timer = setTimeout(loop, EVERY);
  }
  const onVisible = () => {
    if (document.visibilityState !== 'visible' || stopped || !timer) return;
    clearTimeout(timer);
    loop();
  };
  document.addEventListener('visibilitychange', onVisible);
  loop();

  return {
    update() {},
    unmount() {
      stopped = true;
      clearTimeout(timer);
      ac.abort();
      document.removeEventListener('visibilitychange', onVisible);
    },
  };
}
