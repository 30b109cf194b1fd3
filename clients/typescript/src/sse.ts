/**
 * A Server-Sent Events parser (the WHATWG "event stream interpretation"),
 * over a stream of text chunks: lines end in CRLF, LF or CR (also split
 * across chunks), comments start with ":", `data:` lines join with "\n",
 * `id:` persists from event to event, and an event is dispatched at a
 * blank line only — a stream cut in the middle of an event dispatches
 * nothing of it.
 */

/** One dispatched event. */
export interface SSEEvent {
  /** The `event:` field ("message" without one). */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last event id: this event's `id:`, else the one before (SSE's lastEventId). */
  id: string;
  /** The `retry:` field, when the event had one. */
  retry?: number;
}

/** An incremental SSE parser: push text, take the events it completed. */
export class SSEParser {
  private buf = "";
  private sawCR = false;
  private first = true;
  private data: string[] = [];
  private event = "";
  private retry: number | undefined;
  private hasData = false;
  /** The last event id seen (SSE's lastEventId buffer). */
  lastEventId = "";

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): SSEEvent[] {
    const out: SSEEvent[] = [];
    if (this.first && chunk.length > 0) {
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
      this.first = false;
    }
    let text = chunk;
    if (this.sawCR && text.startsWith("\n")) text = text.slice(1); // the LF of a CRLF split across chunks
    this.sawCR = false;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.buf + text.slice(start, i);
      this.buf = "";
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.sawCR = true;
        }
      }
      start = i + 1;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    this.buf += text.slice(start);
    return out;
  }

  private line(line: string): SSEEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined; // a comment (": ping", ": watching")
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
    }
    switch (field) {
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\u0000")) this.lastEventId = value;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
      default: // ignored
    }
    return undefined;
  }

  private dispatch(): SSEEvent | undefined {
    const ev: SSEEvent = { event: this.event || "message", data: this.data.join("\n"), id: this.lastEventId };
    if (this.retry !== undefined) ev.retry = this.retry;
    const had = this.hasData;
    this.data = [];
    this.event = "";
    this.retry = undefined;
    this.hasData = false;
    return had ? ev : undefined;
  }
}
