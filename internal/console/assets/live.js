// live.js — follow a session's watch stream (SSE over fetch, so the
// Authorization header can be sent), resuming with Last-Event-ID.

import { qs, request, sessionPath } from './api.js';

const MIN_BACKOFF = 500;
const MAX_BACKOFF = 5000;

// SSEParser turns chunks of text into events {id, event, data}.
class SSEParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buf = '';
    this.reset();
  }
  reset() { this.data = []; this.event = ''; this.id = null; }
  push(text) {
    this.buf += text;
    let m;
    const re = /\r\n|\r|\n/g;
    let start = 0;
    // keep a trailing "\r" for the next chunk: it may be half of "\r\n"
    while ((m = re.exec(this.buf)) !== null) {
      if (m[0] === '\r' && m.index === this.buf.length - 1) break;
      this.line(this.buf.slice(start, m.index));
      start = re.lastIndex;
    }
    this.buf = this.buf.slice(start);
  }
  line(line) {
    if (line === '') {
      if (this.data.length || this.event) {
        this.onEvent({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      }
      this.reset();
      return;
    }
    if (line.startsWith(':')) return; // comment (": watching", ": ping")
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
  }
}

// Watch follows /v1/sessions/{sid}/watch?afterSeq=…; callbacks:
// onEntry(entry, seq), onState('live'|'reconnecting'|'off'), onError(err).
export class Watch {
  constructor(sid, afterSeq, { onEntry, onState, onError }) {
    this.sid = sid;
    this.afterSeq = afterSeq;
    this.lastId = null;
    this.onEntry = onEntry;
    this.onState = onState;
    this.onError = onError;
    this.ctrl = null;
    this.stopped = false;
    this.backoff = MIN_BACKOFF;
    this.timer = 0;
  }

  start() { this.connect(); }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ctrl) this.ctrl.abort();
    this.onState('off');
  }

  async connect() {
    if (this.stopped) return;
    this.ctrl = new AbortController();
    const headers = { Accept: 'text/event-stream' };
    if (this.lastId !== null) headers['Last-Event-ID'] = this.lastId;
    try {
      const res = await request('Watching the session', sessionPath(this.sid) + '/watch' + qs({ afterSeq: this.afterSeq }),
        { raw: true, signal: this.ctrl.signal, headers });
      this.onState('live');
      this.backoff = MIN_BACKOFF;
      const parser = new SSEParser((ev) => {
        if (ev.id !== null) this.lastId = ev.id;
        if (ev.event !== 'entry' || !ev.data) return;
        let entry;
        try { entry = JSON.parse(ev.data); } catch { return; }
        this.onEntry(entry, Number(ev.id));
      });
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(dec.decode(value, { stream: true }));
      }
      parser.push(dec.decode());
      throw new Error('the stream ended');
    } catch (e) {
      if (this.stopped || (e && e.name === 'AbortError')) return;
      // request has shown the token form for a 401/403 already
      if (e && e.isAuth) { this.stop(); return; }
      if (e && (e.status === 404 || e.status === 400)) { this.onError(e); this.stop(); return; }
      this.onState('reconnecting');
      const wait = this.backoff;
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF);
      this.timer = setTimeout(() => this.connect(), wait);
    }
  }
}
