import { CertificateError, SessionLogError, UnavailableError, certificateProblem, decodeError, isRetryable, makeError } from "./errors.js";
import { SSEParser } from "./sse.js";
import {
  Session,
  type ContinueOptions,
  type CreateOptions,
  type ForkFromOptions,
  type InMemoryOptions,
  type OpenOptions,
} from "./session.js";
import type {
  Cursor,
  DeleteResult,
  Fresh,
  Freshness,
  ForkResult,
  ImportResult,
  SearchHit,
  SearchReply,
  SeqEntry,
  SessionContext,
  SessionDetails,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionPage,
  SessionTreeNode,
  WriteResult,
} from "./types.js";

/** How requests that failed for a passing reason (no reply, 5xx, `unavailable`, `timeout`) are sent again. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 6). */
  attempts?: number;
  /** The first backoff, doubling (default 50 ms). */
  backoffMs?: number;
  /** The longest backoff (default 2000 ms). */
  maxBackoffMs?: number;
  /** One attempt's timeout (default 30 s; watch streams have none). */
  attemptTimeoutMs?: number;
}

/** Options of {@link SessionLog}. */
export interface SessionLogOptions {
  /** pi-node's HTTP API, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The bearer token (pi-node's `--http-token`, or a scoped one of `--http-tokens`). */
  token?: string;
  /** A fetch to use instead of the global one (a proxy's, a test's). */
  fetch?: typeof fetch;
  /** Retries of passing failures. */
  retry?: RetryOptions;
  /**
   * Write every session as pi 1.1.0's SessionManager does (Go: WithPi11):
   * a new session (or pending fork) is stored at its first user or
   * assistant message instead of its first assistant message (this store's
   * default and pi 0.73.1's rule); a branch summary's fromId is the leaf
   * left behind; a name's CR/LF runs become one space; a pending fork
   * re-chains its path over the labels it drops; the header's cwd is
   * normalised ("/a//b/" is "/a/b"). docs/PI.md says which pi does which.
   */
  pi11?: boolean;
}

/** Options of one request. */
export interface RequestOptions {
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
  /** A body sent as it is (import's JSONL). */
  rawBody?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Send it again on a passing failure (default true). */
  retry?: boolean;
  /** Read the reply as text instead of JSON. */
  text?: boolean;
}

/** Options of list. */
export interface ListOptions {
  limit?: number;
  cursor?: string;
  name?: string;
  cwd?: string;
  label?: string;
  /** Only the forks of this session (their header's parentSession). */
  parentSession?: string;
  /** Modified at or after (RFC 3339, or a Date). */
  since?: string | Date;
  preview?: boolean;
  minSeq?: number;
  consistency?: "strong";
  signal?: AbortSignal;
}

/** Options of search. */
export interface SearchOptions {
  /** `all` (default): every entry; `path`: only the entries on each session's default path. */
  branch?: "all" | "path";
  /** Hits per page (default 20, at most 100). */
  limit?: number;
  /** The previous page's `next`. */
  cursor?: string;
  minSeq?: number;
  consistency?: "strong";
  signal?: AbortSignal;
}

/** Options of reads that take a leaf. */
export interface LeafOptions {
  /** An entry id, or null: before the first entry. Wins over `client`. */
  leaf?: string | null;
  /** Whose cursor gives the leaf. */
  client?: string;
  minSeq?: number;
  signal?: AbortSignal;
}

/** Options of watch. */
export interface WatchOptions {
  /** Start after this stream sequence (default: every entry). */
  afterSeq?: number;
  minSeq?: number;
  /** Ends the iteration (it returns, no error). */
  signal?: AbortSignal;
}

/** Options of a raw append. */
export interface AppendOptions {
  client?: string;
  expectLastSeq?: number;
  minSeq?: number;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(t);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** An AbortSignal that fires when `outer` does or after `ms`; `clear` stops the timer. */
function linked(outer: AbortSignal | undefined, ms: number | undefined) {
  const ac = new AbortController();
  const onAbort = () => ac.abort(outer?.reason);
  if (outer) {
    if (outer.aborted) ac.abort(outer.reason);
    else outer.addEventListener("abort", onAbort, { once: true });
  }
  const t = ms ? setTimeout(() => ac.abort(makeError("timeout", 0, `no reply within ${ms} ms`)), ms) : undefined;
  return {
    signal: ac.signal,
    clear() {
      if (t !== undefined) clearTimeout(t);
      outer?.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * A client of pi-node's HTTP API (docs/API.md): sessions as pi's
 * SessionManager holds them ({@link create}, {@link open}), and the
 * API's operations.
 */
export class SessionLog {
  readonly baseUrl: string;
  private readonly token: string | undefined;
  /** See {@link SessionLogOptions.pi11}. */
  readonly pi11: boolean;
  private readonly fetchFn: typeof fetch;
  private readonly retry: Required<RetryOptions>;
  private readonly seen = new Map<string, number>(); // the highest sequence written or read, by session
  private seenAny = 0;

  constructor(opts: SessionLogOptions) {
    if (!opts || !opts.baseUrl) throw makeError("invalid", 0, "baseUrl: required", { field: "baseUrl" });
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.token = opts.token;
    this.pi11 = opts.pi11 ?? false;
    this.fetchFn = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retry = {
      attempts: opts.retry?.attempts ?? 6,
      backoffMs: opts.retry?.backoffMs ?? 50,
      maxBackoffMs: opts.retry?.maxBackoffMs ?? 2000,
      attemptTimeoutMs: opts.retry?.attemptTimeoutMs ?? 30_000,
    };
  }

  // ---------------------------------------------------------------- sessions

  /**
   * Starts a new session in memory, as pi's SessionManager does: nothing is
   * stored until its first assistant message, which stores the header and
   * every entry before it in one atomic create request.
   */
  create(opts: CreateOptions = {}): Session {
    return Session.create(this, opts);
  }

  /** Resumes a stored session: at the client's cursor with `clientId`, else at pi's default leaf (the last entry). */
  open(sessionId: string, opts: OpenOptions = {}): Promise<Session> {
    return Session.open(this, sessionId, opts);
  }

  /**
   * pi's continueRecent: opens the stored session of `cwd` (the header's,
   * exactly) modified last, or, when the cwd has none, creates one there
   * (pending until its first assistant message, as {@link create}). It
   * lists every session of the cwd to find it. A session another worker
   * still holds pending is not stored, so not found.
   */
  async continueRecent(cwd: string, opts: ContinueOptions = {}): Promise<Session> {
    let recent: SessionInfo | undefined;
    for await (const s of this.listAll({ cwd, signal: opts.signal })) {
      // Ties go to the later-created session: the list is in creation order.
      if (!recent || Date.parse(s.modified) >= Date.parse(recent.modified)) recent = s;
    }
    if (recent) return this.open(recent.sessionId, opts);
    return this.create({ cwd, clientId: opts.clientId, exclusive: opts.exclusive });
  }

  /**
   * pi's inMemory: a session that is never stored. Its appends stay in this
   * process (no request, whatever the messages), as do its branches and
   * {@link Session.createBranchedSession}; {@link Session.buildSessionContext}
   * still asks pi-node to compute the context (`POST /v1/context`, which
   * stores nothing). No cursor: it has no clientId.
   */
  inMemory(opts: InMemoryOptions = {}): Session {
    return Session.create(this, { cwd: opts.cwd, id: opts.id, parentSession: opts.parentSession, persist: false });
  }

  /**
   * pi's forkFrom: a new session in `targetCwd` holding every entry of
   * `sourceSessionId` — its whole tree, with the same ids — its header's
   * `parentSession` the source's id, stored at once (one create request,
   * so within pi-node's body and atomic batch limits, else a TooLargeError) and opened at its
   * last entry (with `clientId`, the cursor is set there). Unlike
   * {@link fork} (pi's createBranchedSession), which keeps only the path
   * to one entry, nothing of the source is left out. The source is unchanged.
   */
  forkFrom(sourceSessionId: string, targetCwd: string, opts: ForkFromOptions = {}): Promise<Session> {
    return Session.forkFrom(this, sourceSessionId, targetCwd, opts);
  }

  /** One page of sessions, in id (creation) order. */
  list(opts: ListOptions = {}): Promise<Fresh<SessionPage>> {
    const since = opts.since instanceof Date ? opts.since.toISOString() : opts.since;
    return this.read<SessionPage>("/v1/sessions", {
      query: {
        limit: opts.limit,
        cursor: opts.cursor,
        name: opts.name,
        cwd: opts.cwd,
        label: opts.label,
        parentSession: opts.parentSession,
        since,
        preview: opts.preview,
        minSeq: this.minSeq(undefined, opts.minSeq),
        consistency: opts.consistency,
      },
      signal: opts.signal,
    });
  }

  /** Every session matching the filter, page after page. */
  async *listAll(opts: Omit<ListOptions, "cursor"> = {}): AsyncGenerator<SessionInfo, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.list({ ...opts, cursor });
      yield* page.sessions;
      if (!page.next) return;
      cursor = page.next;
    }
  }

  /**
   * One page of the entries matching `query`, best first, across every
   * session the token may read (GET /v1/search). `query` is pi-node's
   * search language (docs/API.md, Search): words, `"phrases"`, `prefix*`,
   * `-excluded`, and filters such as `role:assistant`, `tool:bash`,
   * `since:2026-12-01`. A query that does not parse is an InvalidError
   * (field `q`) whose message names the position and what was expected.
   */
  search(query: string, opts: SearchOptions = {}): Promise<Fresh<SearchReply>> {
    return this.read<SearchReply>("/v1/search", {
      query: {
        q: query,
        branch: opts.branch,
        limit: opts.limit,
        cursor: opts.cursor,
        minSeq: this.minSeq(undefined, opts.minSeq),
        consistency: opts.consistency,
      },
      signal: opts.signal,
    });
  }

  /** Every hit of `query`, page after page (each page a request of `limit` hits). */
  async *searchAll(query: string, opts: Omit<SearchOptions, "cursor"> = {}): AsyncGenerator<SearchHit, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.search(query, { ...opts, cursor });
      yield* page.hits;
      if (!page.next) return;
      cursor = page.next;
    }
  }

  /**
   * The session's list record with its header, labels and default leaf;
   * `include: "usage"` adds `usageBreakdown`, pi 1.1's usage and cost per
   * model over every entry.
   */
  get(
    sessionId: string,
    opts: { minSeq?: number; consistency?: "strong"; include?: "usage"; signal?: AbortSignal } = {},
  ): Promise<Fresh<SessionDetails>> {
    return this.read(`/v1/sessions/${enc(sessionId)}`, {
      query: { minSeq: this.minSeq(sessionId, opts.minSeq), consistency: opts.consistency, include: opts.include },
      signal: opts.signal,
    });
  }

  /** One page of entries with seq > afterSeq, in log order. */
  entries(
    sessionId: string,
    opts: { afterSeq?: number; limit?: number; minSeq?: number; signal?: AbortSignal } = {},
  ): Promise<Fresh<{ entries: SeqEntry[]; lastSeq: number }>> {
    return this.read(`/v1/sessions/${enc(sessionId)}/entries`, {
      query: { afterSeq: opts.afterSeq, limit: opts.limit, minSeq: this.minSeq(sessionId, opts.minSeq) },
      signal: opts.signal,
    });
  }

  /** Every entry with seq > afterSeq, reading page after page up to the session's lastSeq; the freshness is the last page's. */
  async allEntries(
    sessionId: string,
    opts: { afterSeq?: number; minSeq?: number; signal?: AbortSignal } = {},
  ): Promise<Fresh<{ entries: SeqEntry[]; lastSeq: number }>> {
    const out: SeqEntry[] = [];
    let after = opts.afterSeq ?? 0;
    for (;;) {
      const page = await this.entries(sessionId, { afterSeq: after, limit: 10_000, minSeq: opts.minSeq, signal: opts.signal });
      out.push(...page.entries);
      const last = page.entries[page.entries.length - 1];
      if (!last || last.seq >= page.lastSeq) return withFreshness({ entries: out, lastSeq: page.lastSeq }, page.freshness);
      after = last.seq;
    }
  }

  /** pi's getTree(): every entry in a tree, roots in file order, children by timestamp, labels resolved. */
  tree(sessionId: string, opts: LeafOptions = {}): Promise<Fresh<{ tree: SessionTreeNode[]; leafId: string | null }>> {
    return this.read(`/v1/sessions/${enc(sessionId)}/tree`, {
      query: { include: "entries", ...leafQuery(opts), minSeq: this.minSeq(sessionId, opts.minSeq) },
      signal: opts.signal,
    });
  }

  /** What pi would send the model at a leaf (buildSessionContext); `format: "llm"` as pi's convertToLlm. */
  context(sessionId: string, opts: LeafOptions & { format?: "agent" | "llm" } = {}): Promise<Fresh<SessionContext>> {
    return this.read(`/v1/sessions/${enc(sessionId)}/context`, {
      query: { ...leafQuery(opts), minSeq: this.minSeq(sessionId, opts.minSeq), format: opts.format },
      signal: opts.signal,
    });
  }

  /** pi's buildSessionContext over entries given here (no session needed): POST /v1/context. */
  buildContext(
    entries: SessionEntry[],
    opts: { leaf?: string | null; format?: "agent" | "llm"; signal?: AbortSignal } = {},
  ): Promise<SessionContext> {
    const body: Record<string, unknown> = { entries };
    if (opts.leaf !== undefined) body["leaf"] = opts.leaf;
    if (opts.format) body["format"] = opts.format;
    return this.request("POST", "/v1/context", { body, signal: opts.signal });
  }

  /**
   * Stores a new session in one atomic request. Retried after a lost reply:
   * a `409` on `header.id` then means the first attempt may have stored it,
   * and the session is read back — if its entries are these, the write was
   * ours and succeeds.
   */
  async createSession(
    header: SessionHeader,
    entries: SessionEntry[],
    opts: { client?: string; signal?: AbortSignal } = {},
  ): Promise<WriteResult> {
    const body: Record<string, unknown> = { header, entries };
    if (opts.client) body["client"] = opts.client;
    let attempt = 0;
    for (;;) {
      try {
        const r = await this.request<WriteResult>("POST", "/v1/sessions", { body, signal: opts.signal, retry: false });
        this.observe(header.id, r.lastSeq);
        return r;
      } catch (err) {
        if (attempt > 0 && err instanceof SessionLogError && err.code === "conflict" && err.field === "header.id") {
          const mine = await this.createdByUs(header.id, entries, opts.signal);
          if (mine) {
            this.observe(header.id, mine.lastSeq);
            return mine;
          }
        }
        attempt++;
        if (!isRetryable(err) || attempt >= this.retry.attempts) throw err;
        await sleep(this.backoff(attempt), opts.signal);
      }
    }
  }

  /** The reply a create of these entries would have had, if the stored session holds them. */
  private async createdByUs(sessionId: string, entries: SessionEntry[], signal?: AbortSignal): Promise<WriteResult | undefined> {
    const stored = await this.allEntries(sessionId, { signal });
    if (stored.entries.length < entries.length) return undefined;
    const res: WriteResult = { sessionId, lastSeq: stored.lastSeq, entries: [] };
    for (let i = 0; i < entries.length; i++) {
      const s = stored.entries[i];
      if (!s || s.entry.id !== entries[i]?.id) return undefined;
      res.entries.push({ id: s.entry.id, seq: s.seq });
    }
    return res;
  }

  /** Appends entries atomically (POST /v1/sessions/{id}/entries); retried with the same ids, which the server stores once. */
  async append(sessionId: string, entries: Partial<SessionEntry>[], opts: AppendOptions = {}): Promise<WriteResult> {
    const body: Record<string, unknown> = { entries };
    if (opts.client) body["client"] = opts.client;
    if (opts.expectLastSeq !== undefined) body["expectLastSeq"] = opts.expectLastSeq;
    const retry = entries.every((e) => typeof e.id === "string");
    const r = await this.request<WriteResult>("POST", `/v1/sessions/${enc(sessionId)}/entries`, {
      body,
      query: { minSeq: opts.minSeq },
      signal: opts.signal,
      retry,
    });
    this.observe(sessionId, r.lastSeq);
    return r;
  }

  /** A client's cursor. */
  getCursor(sessionId: string, client: string, opts: { signal?: AbortSignal } = {}): Promise<Cursor> {
    return this.request("GET", `/v1/sessions/${enc(sessionId)}/cursors/${enc(client)}`, { signal: opts.signal });
  }

  /** Moves a client's cursor (null: before the first entry); `expectRevision` makes it a compare-and-set. */
  setCursor(
    sessionId: string,
    client: string,
    leafId: string | null,
    opts: { expectRevision?: number; minSeq?: number; signal?: AbortSignal } = {},
  ): Promise<Cursor> {
    const body: Record<string, unknown> = { leafId };
    if (opts.expectRevision !== undefined) body["expectRevision"] = opts.expectRevision;
    return this.request("PUT", `/v1/sessions/${enc(sessionId)}/cursors/${enc(client)}`, {
      body,
      query: { minSeq: this.minSeq(sessionId, opts.minSeq) },
      signal: opts.signal,
    });
  }

  /** Removes a client's cursor (a missing one is no error). */
  async deleteCursor(sessionId: string, client: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await this.request("DELETE", `/v1/sessions/${enc(sessionId)}/cursors/${enc(client)}`, { signal: opts.signal, text: true });
  }

  /** Every cursor of a session. */
  async listCursors(sessionId: string, opts: { signal?: AbortSignal } = {}): Promise<Cursor[]> {
    const r = await this.request<{ cursors: Cursor[] }>("GET", `/v1/sessions/${enc(sessionId)}/cursors`, { signal: opts.signal });
    return r.cursors;
  }

  /**
   * pi's createBranchedSession on the server: a new session holding the path
   * from the root to `entryId`. Not retried (a retry could fork twice).
   */
  async fork(sessionId: string, entryId: string, opts: { minSeq?: number; pi11?: boolean; signal?: AbortSignal } = {}): Promise<ForkResult> {
    const r = await this.request<ForkResult>("POST", `/v1/sessions/${enc(sessionId)}/fork`, {
      body: opts.pi11 ? { entryId, pi11: true } : { entryId },
      query: { minSeq: this.minSeq(sessionId, opts.minSeq) },
      signal: opts.signal,
      retry: false,
    });
    this.observe(r.sessionId, r.lastSeq);
    return r;
  }

  /**
   * Erases the session wherever the cluster keeps it (DELETE
   * /v1/sessions/{id}; docs/SECURITY.md, Erasure): its log records are
   * overwritten, its cursors and archived copies removed, and every
   * pi-node drops it from memory, snapshots and search index. It cannot be
   * undone. `expectLastSeq` erases only if the session's lastSeq is that,
   * else a ConflictError carrying the current `lastSeq` and nothing
   * erased. No such session (or another tenant's) is a NotFoundError. Not
   * retried: after a lost reply a retry would find nothing to erase and
   * say NotFoundError; `get` tells whether it is gone.
   */
  delete(sessionId: string, opts: { expectLastSeq?: number; minSeq?: number; signal?: AbortSignal } = {}): Promise<DeleteResult> {
    return this.request<DeleteResult>("DELETE", `/v1/sessions/${enc(sessionId)}`, {
      query: { expectLastSeq: opts.expectLastSeq, minSeq: this.minSeq(sessionId, opts.minSeq) },
      signal: opts.signal,
      retry: false,
    });
  }

  /** Imports a pi session file (any version); `strict` refuses the first bad line instead of skipping it. */
  async import(jsonl: string, opts: { strict?: boolean; signal?: AbortSignal } = {}): Promise<ImportResult> {
    const r = await this.request<ImportResult>("POST", "/v1/import", {
      rawBody: jsonl,
      query: { strict: opts.strict ? true : undefined },
      headers: { "Content-Type": "application/x-ndjson" },
      signal: opts.signal,
    });
    this.observe(r.sessionId, r.lastSeq);
    return r;
  }

  /** The session as pi's JSONL file, byte for byte. */
  export(sessionId: string, opts: { minSeq?: number; signal?: AbortSignal } = {}): Promise<string> {
    return this.request("GET", `/v1/sessions/${enc(sessionId)}/export`, {
      query: { minSeq: this.minSeq(sessionId, opts.minSeq) },
      signal: opts.signal,
      text: true,
    });
  }

  /** This node and its view of the log. */
  status(opts: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    return this.request("GET", "/v1/status", { signal: opts.signal });
  }

  /**
   * Follows a session's entries (GET /v1/sessions/{id}/watch, Server-Sent
   * Events over fetch): those after `afterSeq`, then each new one. A dropped
   * connection is reopened with `Last-Event-ID`, so no entry is lost or
   * repeated. Aborting `signal` (or leaving the loop) ends it; an error
   * reply (404: no such session) or failures beyond the retry budget throw.
   */
  async *watch(sessionId: string, opts: WatchOptions = {}): AsyncGenerator<SeqEntry, void, undefined> {
    const url = this.url(`/v1/sessions/${enc(sessionId)}/watch`, { afterSeq: opts.afterSeq, minSeq: this.minSeq(sessionId, opts.minSeq) });
    let last: number | undefined = opts.afterSeq;
    let failures = 0;
    const ac = new AbortController();
    const onAbort = () => ac.abort(opts.signal?.reason);
    if (opts.signal?.aborted) return;
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        const headers = this.headers({ Accept: "text/event-stream" });
        if (last !== undefined) headers["Last-Event-ID"] = String(last);
        let res: Response;
        try {
          res = await this.fetchFn(url, { method: "GET", headers, signal: ac.signal });
        } catch (err) {
          if (ac.signal.aborted) return;
          if (++failures >= this.retry.attempts) throw new UnavailableError("unavailable", 0, `watch ${sessionId}: ${String(err)}`, { cause: err });
          await sleep(this.backoff(failures), ac.signal).catch(() => undefined);
          continue;
        }
        if (!res.ok) {
          const err = decodeError(res.status, await res.text().catch(() => ""));
          if (!isRetryable(err) || ++failures >= this.retry.attempts) throw err;
          await sleep(this.backoff(failures), ac.signal).catch(() => undefined);
          continue;
        }
        failures = 0;
        const parser = new SSEParser();
        const decoder = new TextDecoder();
        const reader = res.body?.getReader();
        if (!reader) throw makeError("internal", res.status, "watch: the reply has no body");
        try {
          for (;;) {
            let chunk: ReadableStreamReadResult<Uint8Array>;
            try {
              chunk = await reader.read();
            } catch {
              break; // the connection dropped: reconnect
            }
            if (chunk.done) break;
            for (const ev of parser.push(decoder.decode(chunk.value, { stream: true }))) {
              if (ev.event !== "entry") continue;
              const seq = Number(ev.id);
              if (!Number.isSafeInteger(seq) || (last !== undefined && seq <= last)) continue;
              const entry = JSON.parse(ev.data) as SessionEntry;
              last = seq;
              yield { seq, entry };
            }
          }
        } finally {
          reader.cancel().catch(() => undefined);
        }
        if (ac.signal.aborted) return;
        // The server ended the stream (shutdown, a purge) or it dropped:
        // come back after the last entry seen.
        await sleep(this.backoff(Math.max(1, ++failures)), ac.signal).catch(() => undefined);
        if (ac.signal.aborted) return;
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      ac.abort();
    }
  }

  /**
   * Raises the minimum sequence of this client's reads of a session (and of
   * list): every write it makes does, so its reads reflect its writes on any
   * pi-node. Call it with a lastSeq another worker handed over.
   */
  observe(sessionId: string, seq: number | undefined): void {
    if (!seq) return;
    if ((this.seen.get(sessionId) ?? 0) < seq) this.seen.set(sessionId, seq);
    if (this.seenAny < seq) this.seenAny = seq;
  }

  /** The minSeq of a read of sessionId: the larger of the one given and the one observed. */
  private minSeq(sessionId: string | undefined, given: number | undefined): number | undefined {
    const known = sessionId === undefined ? this.seenAny : this.seen.get(sessionId) ?? 0;
    return Math.max(given ?? 0, known) || undefined;
  }

  // ------------------------------------------------------------------ plumbing

  /** The backoff before attempt n + 1 (n ≥ 1), with jitter. */
  private backoff(n: number): number {
    if (n <= 0) return 0;
    const b = Math.min(this.retry.maxBackoffMs, this.retry.backoffMs * 2 ** (n - 1));
    return b / 2 + Math.random() * (b / 2);
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra };
    if (this.token) h["Authorization"] = `Bearer ${this.token}`;
    return h;
  }

  private url(path: string, query: RequestOptions["query"] = {}): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined) continue;
      q.set(k, v === null ? "null" : String(v));
    }
    const s = q.toString();
    return this.baseUrl + path + (s ? `?${s}` : "");
  }

  /**
   * One API request: JSON in and out, errors decoded into their classes,
   * passing failures retried (the same request, the same body) unless
   * `retry: false`.
   */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return (await this.exchange<T>(method, path, opts)).body;
  }

  /** A GET of a JSON object with the freshness headers of its reply attached. */
  private async read<T extends object>(path: string, opts: RequestOptions): Promise<Fresh<T>> {
    const r = await this.exchange<T>("GET", path, opts);
    return withFreshness(r.body, freshnessOf(r.headers));
  }

  /** {@link request}, keeping the reply's headers. */
  private async exchange<T>(method: string, path: string, opts: RequestOptions): Promise<{ body: T; headers: Headers }> {
    const url = this.url(path, opts.query);
    const headers = this.headers(opts.headers);
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["Content-Type"] ??= "application/json";
    }
    const attempts = opts.retry === false ? 1 : this.retry.attempts;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(method, url, headers, body, opts);
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason ?? err;
        if (attempt >= attempts || !isRetryable(err)) throw err;
        await sleep(this.backoff(attempt), opts.signal);
      }
    }
  }

  private async once<T>(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    opts: RequestOptions,
  ): Promise<{ body: T; headers: Headers }> {
    const l = linked(opts.signal, this.retry.attemptTimeoutMs);
    try {
      let res: Response;
      let text: string;
      try {
        res = await this.fetchFn(url, { method, headers, body, signal: l.signal });
        text = await res.text();
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        if (err instanceof SessionLogError) throw err;
        if (l.signal.aborted && l.signal.reason instanceof SessionLogError) throw l.signal.reason;
        const cert = certificateProblem(err);
        if (cert) {
          throw new CertificateError("certificate", 0,
            `${method} ${url}: pi-node's TLS certificate is not trusted (${cert}): give the CA that signed it (Node.js: NODE_EXTRA_CA_CERTS=ca.pem)`, { cause: err });
        }
        throw new UnavailableError("unavailable", 0, `${method} ${url}: no reply: ${String(err)}`, { cause: err });
      }
      if (!res.ok) throw decodeError(res.status, text);
      const reply = (b: unknown) => ({ body: b as T, headers: res.headers });
      if (opts.text) return reply(text);
      if (text === "") return reply(undefined);
      try {
        return reply(JSON.parse(text));
      } catch (err) {
        throw makeError("internal", res.status, `${method} ${url}: the reply is not JSON`, { cause: err });
      }
    } finally {
      l.clear();
    }
  }
}

/** The freshness headers of a reply (docs/API.md, Freshness of reads); without them it claims nothing. */
function freshnessOf(h: Headers): Freshness {
  const applied = Number(h.get("Pi-Applied-Seq") ?? "");
  const lagText = h.get("Pi-Lag");
  const lag = lagText !== null && lagText !== "" && Number.isSafeInteger(Number(lagText)) ? Number(lagText) : "unknown";
  const known = h.get("Pi-Applied-Seq") !== null && Number.isSafeInteger(applied);
  const f: Freshness = {
    appliedSeq: known ? applied : 0,
    lag: known ? lag : "unknown",
    stale: !known || h.get("Pi-Stale") === "true",
  };
  const node = h.get("Pi-Node");
  if (node) f.node = node;
  const servedBy = h.get("Pi-Served-By");
  if (servedBy) f.servedBy = servedBy;
  return f;
}

/** body with `freshness` attached, non-enumerable so that the body serializes as the server sent it. */
function withFreshness<T extends object>(body: T, freshness: Freshness): Fresh<T> {
  return Object.defineProperty(body, "freshness", { value: freshness, enumerable: false }) as Fresh<T>;
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

function leafQuery(opts: LeafOptions): Record<string, string | number | null | undefined> {
  const q: Record<string, string | number | null | undefined> = { minSeq: opts.minSeq };
  if (opts.leaf !== undefined) q["leaf"] = opts.leaf;
  else if (opts.client) q["client"] = opts.client;
  return q;
}
