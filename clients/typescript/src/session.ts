import type { SessionLog } from "./client.js";
import { ConflictError, NotFoundError, SessionLogError, makeError } from "./errors.js";
import { entryId, uuidv7 } from "./ids.js";
import type {
  AgentMessage,
  ContentBlock,
  Cursor,
  MessageLike,
  SessionContext,
  SessionEntry,
  SessionHeader,
  SessionTreeNode,
  SystemMessage,
  ToolDeclaration,
  Usage,
  UsageEntry,
} from "./types.js";

/** Options of {@link SessionLog.create}. */
export interface CreateOptions {
  /** The working directory in the header (default ""). */
  cwd?: string;
  /** The session id, a lower-case UUID (default a new UUIDv7). */
  id?: string;
  /** The session this one was branched from. */
  parentSession?: string;
  /** This client's cursor id (`[A-Za-z0-9_-]{1,64}`): its leaf is stored on the server and moves with every write. */
  clientId?: string;
  /**
   * This worker owns the session: every append carries `expectLastSeq`, so a
   * write by anybody else since this Session last looked is a ConflictError
   * (with the session's `lastSeq`) instead of a branch.
   */
  exclusive?: boolean;
}

/** Options of {@link SessionLog.open}. */
export interface OpenOptions {
  /** Resume at this client's cursor (default: pi's default leaf, the last entry). */
  clientId?: string;
  /** Read at least up to this log sequence (another worker's lastSeq). */
  minSeq?: number;
  /** See {@link CreateOptions.exclusive}. */
  exclusive?: boolean;
  signal?: AbortSignal;
}

/** Options of {@link SessionLog.inMemory}: a new session's header. */
export type InMemoryOptions = Pick<CreateOptions, "cwd" | "id" | "parentSession">;

/** pi 1.1's appendContextEdit replacement: null leaves the target out of the context. */
export type ContextEditReplacement = { content: string | readonly ContentBlock[] } | null;

/** Options of {@link SessionLog.continueRecent}: those of the open, or of the create when the cwd has no session. */
export type ContinueOptions = Pick<OpenOptions, "clientId" | "exclusive" | "signal">;

/** Options of {@link SessionLog.forkFrom}. */
export interface ForkFromOptions extends ContinueOptions {
  /** The new session's id, a lower-case UUID (default a new UUIDv7). */
  id?: string;
  /** Read the source at least up to this log sequence (another worker's lastSeq). */
  minSeq?: number;
}

/** Options of the context reads. */
export interface ContextOptions {
  /** `llm`: the messages as pi's convertToLlm gives them to a provider. */
  format?: "agent" | "llm";
  signal?: AbortSignal;
}

type Draft = Record<string, unknown> & { type: string };

const roleOf = (e: SessionEntry): unknown => (e.type === "message" ? (e as { message?: { role?: unknown } }).message?.role : undefined);

function localError(code: "not_found" | "invalid", message: string, field?: string): SessionLogError {
  return makeError(code, 0, message, field === undefined ? {} : { field });
}

/**
 * One pi session as pi's SessionManager holds it — a header, entries, a
 * leaf — written through a {@link SessionLog}.
 *
 * A new Session ({@link SessionLog.create}) is pending: its entries live in
 * memory until the first assistant message, which stores the header and
 * every entry in ONE create request (a worker that dies before leaves
 * nothing). After that every append is one request whose entries carry
 * ids chosen here, so that a retry after a lost reply is stored once. The
 * append methods return the new entry's id, as pi's do; {@link lastSeq}
 * is the session's version after the write (pass it as `minSeq`). Writes
 * of one Session are serialized.
 *
 * With a `clientId` the Session's leaf is that client's cursor on the
 * server: the create sets it, appends move it, and {@link branch} and
 * {@link resetLeaf} move it with a PUT. Reads that go to the server
 * ({@link getTree}, {@link buildSessionContext}) pass `minSeq`, so they
 * reflect this Session's writes on any pi-node.
 */
export class Session {
  private readonly log: SessionLog;
  private header: SessionHeader;
  private readonly clientId: string | undefined;
  private readonly exclusive: boolean;
  private readonly persist: boolean;
  private readonly pi11: boolean;
  private entries: SessionEntry[] = [];
  private byId = new Map<string, SessionEntry>();
  private seqs = new Map<string, number>();
  private labels = new Map<string, string>();
  private labelTimes = new Map<string, string>();
  private leafId: string | null = null;
  private flushed = false;
  private seq = 0; // the session's last sequence as this Session knows it
  private synced = 0; // every entry up to this sequence is in this view
  private rev: number | undefined; // the cursor's revision, when known
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    log: SessionLog,
    header: SessionHeader,
    opts: { clientId?: string; exclusive?: boolean; persist?: boolean },
  ) {
    this.log = log;
    this.header = header;
    this.clientId = opts.clientId;
    this.exclusive = opts.exclusive ?? false;
    this.persist = opts.persist ?? true;
    this.pi11 = log.pi11;
  }

  /** @internal */
  static create(log: SessionLog, opts: CreateOptions & { persist?: boolean }): Session {
    if (opts.clientId !== undefined) checkClientId(opts.clientId);
    const id = opts.id ?? uuidv7();
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) {
      throw localError("invalid", `header.id: not a lower-case UUID: ${JSON.stringify(id)}`, "header.id");
    }
    const header: SessionHeader = {
      type: "session",
      version: 3,
      id,
      timestamp: new Date().toISOString(),
      cwd: log.pi11 ? resolveCwd(opts.cwd ?? "") : (opts.cwd ?? ""),
    };
    if (opts.parentSession !== undefined) header.parentSession = opts.parentSession;
    return new Session(log, header, opts);
  }

  /**
   * @internal pi's forkFrom: a new session in `targetCwd` holding every
   * entry of the source (its whole tree, ids kept), its parentSession the
   * source's id, stored at once in one create request.
   */
  static async forkFrom(log: SessionLog, sourceId: string, targetCwd: string, opts: ForkFromOptions): Promise<Session> {
    const target = Session.create(log, { cwd: targetCwd, id: opts.id, parentSession: sourceId, clientId: opts.clientId });
    const source = await log.allEntries(sourceId, { minSeq: opts.minSeq, signal: opts.signal });
    const r = await log.createSession(target.header, source.entries.map((e) => e.entry), { client: opts.clientId, signal: opts.signal });
    const s = await Session.open(log, target.header.id, { clientId: opts.clientId, exclusive: opts.exclusive, minSeq: r.lastSeq, signal: opts.signal });
    if (s.clientId && s.rev === undefined) await s.moveCursor(); // a server without create's "client"
    return s;
  }

  /** @internal */
  static async open(log: SessionLog, sessionId: string, opts: OpenOptions): Promise<Session> {
    if (opts.clientId !== undefined) checkClientId(opts.clientId);
    let cursor: Cursor | undefined;
    if (opts.clientId) {
      try {
        cursor = await log.getCursor(sessionId, opts.clientId, { signal: opts.signal });
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    const minSeq = Math.max(opts.minSeq ?? 0, cursor?.seq ?? 0) || undefined;
    const details = await log.get(sessionId, { minSeq, signal: opts.signal });
    const all = await log.allEntries(sessionId, { minSeq: Math.max(minSeq ?? 0, details.lastSeq) || undefined, signal: opts.signal });
    const s = new Session(log, details.header, opts);
    s.flushed = true;
    for (const { seq, entry } of all.entries) {
      s.addLocal(entry);
      s.seqs.set(entry.id, seq);
    }
    s.seq = s.synced = Math.max(all.lastSeq, details.lastSeq);
    if (cursor) {
      s.leafId = cursor.leafId;
      s.rev = cursor.revision;
    } else {
      s.leafId = s.entries[s.entries.length - 1]?.id ?? null;
    }
    return s;
  }

  // ------------------------------------------------------------------ getters

  /** The session id. */
  getSessionId(): string {
    return this.header.id;
  }
  /** The working directory of the header. */
  getCwd(): string {
    return this.header.cwd;
  }
  /** The header line. */
  getHeader(): SessionHeader {
    return { ...this.header };
  }
  /** The cursor's client id, if any. */
  getClientId(): string | undefined {
    return this.clientId;
  }
  /** Whether the session is stored (false until its first assistant message, and always for an in-memory one). */
  isFlushed(): boolean {
    return this.flushed;
  }
  /** pi's isPersisted: false for a session of {@link SessionLog.inMemory}, which is never stored. */
  isPersisted(): boolean {
    return this.persist;
  }
  /** The session's version as this Session knows it: the log sequence after its last write or read (0 while pending). */
  get lastSeq(): number {
    return this.seq;
  }
  /** The log sequence of a stored entry. */
  getSeq(id: string): number | undefined {
    return this.seqs.get(id);
  }
  /** The current leaf (null before the first entry, or after resetLeaf). */
  getLeafId(): string | null {
    return this.leafId;
  }
  /** The leaf's entry. */
  getLeafEntry(): SessionEntry | undefined {
    return this.leafId ? this.byId.get(this.leafId) : undefined;
  }
  /** An entry by id. */
  getEntry(id: string): SessionEntry | undefined {
    return this.byId.get(id);
  }
  /** The direct children of an entry. */
  getChildren(parentId: string): SessionEntry[] {
    return this.entries.filter((e) => e.parentId === parentId);
  }
  /** An entry's label. */
  getLabel(id: string): string | undefined {
    return this.labels.get(id);
  }
  /** Every entry in log order (a copy). */
  getEntries(): SessionEntry[] {
    return [...this.entries];
  }
  /** The name of the last session_info that has one. */
  getSessionName(): string | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i] as SessionEntry;
      if (e.type === "session_info" && typeof e["name"] === "string" && e["name"]) return e["name"] as string;
    }
    return undefined;
  }
  /** pi's getBranch: the entries from the root to `fromId` (default the leaf). */
  getBranch(fromId?: string): SessionEntry[] {
    const path: SessionEntry[] = [];
    const start = fromId ?? this.leafId;
    let cur = start ? this.byId.get(start) : undefined;
    const seen = new Set<string>();
    while (cur && !seen.has(cur.id)) {
      seen.add(cur.id);
      path.unshift(cur);
      cur = cur.parentId ? this.byId.get(cur.parentId) : undefined;
    }
    return path;
  }

  /**
   * pi's getTree(). A stored session's tree comes from the server
   * (`GET /tree?include=entries`, with `minSeq`), so it holds every writer's
   * entries; a pending one's is built here.
   */
  async getTree(opts: { signal?: AbortSignal } = {}): Promise<SessionTreeNode[]> {
    if (!this.flushed) return this.localTree();
    const r = await this.log.tree(this.header.id, { leaf: this.leafId, minSeq: this.seq || undefined, signal: opts.signal });
    // A pi-node older than tree?include=entries answers nodes of ids and
    // types only: build the tree from this view then (after a sync).
    if (r.tree.length > 0 && !(r.tree[0] as Partial<SessionTreeNode>).entry) {
      await this.sync({ signal: opts.signal });
      return this.localTree();
    }
    return r.tree;
  }

  /** pi's getTree() over this Session's view, without a request. */
  localTree(): SessionTreeNode[] {
    const nodes = new Map<string, SessionTreeNode>();
    const roots: SessionTreeNode[] = [];
    for (const entry of this.entries) {
      const n: SessionTreeNode = { entry, children: [] };
      const label = this.labels.get(entry.id);
      if (label !== undefined) {
        n.label = label;
        const t = this.labelTimes.get(entry.id);
        if (t !== undefined) n.labelTimestamp = t;
      }
      nodes.set(entry.id, n);
    }
    for (const entry of this.entries) {
      const n = nodes.get(entry.id) as SessionTreeNode;
      const parent = entry.parentId === null || entry.parentId === entry.id ? undefined : nodes.get(entry.parentId);
      if (parent) parent.children.push(n);
      else roots.push(n);
    }
    const stack = [...roots];
    while (stack.length > 0) {
      const n = stack.pop() as SessionTreeNode;
      n.children.sort((a, b) => new Date(a.entry.timestamp).getTime() - new Date(b.entry.timestamp).getTime());
      stack.push(...n.children);
    }
    return roots;
  }

  /**
   * pi's buildSessionContext at the leaf: before the first flush over the
   * entries held here (`POST /v1/context`), after it from the server at
   * this Session's leaf, with `minSeq`.
   */
  buildSessionContext(opts: ContextOptions = {}): Promise<SessionContext> {
    if (!this.flushed) {
      return this.log.buildContext(this.entries, { leaf: this.leafId, format: opts.format, signal: opts.signal });
    }
    return this.log.context(this.header.id, {
      leaf: this.leafId,
      minSeq: this.seq || undefined,
      format: opts.format,
      signal: opts.signal,
    });
  }

  /**
   * pi 1.1's getCurrentSystemMessage over the context at the leaf: every
   * system message replayed into one (content appended, sections patched by
   * name, tools removed then added by name), or undefined when there is
   * none. Asks the server only when the branch holds a system message or a
   * compaction's checkpoint: without either the context has none.
   */
  private async currentSystemMessage(): Promise<SystemMessage | undefined> {
    const has = this.getBranch().some((e) => roleOf(e) === "system" || (e.type === "compaction" && e["systemMessage"] !== undefined));
    if (!has) return undefined;
    const ctx = await this.buildSessionContext();
    return replaySystemMessages(ctx.messages);
  }

  /** The session as pi's JSONL file, as this Session holds it. */
  toJSONL(): string {
    return [this.header, ...this.entries].map((e) => `${JSON.stringify(e)}\n`).join("");
  }

  // ------------------------------------------------------------------ appends

  /**
   * Appends a message as a child of the leaf; the first assistant message
   * stores the session. Returns the entry id. Generic, so that a message
   * literal keeps its own fields and pi-ai's message types pass uncast.
   */
  async appendMessage<M extends MessageLike>(message: M): Promise<string> {
    return (await this.appendMessages([message]))[0] as string;
  }

  /**
   * Appends several messages as one atomic chain (an assistant message and
   * its tool results): each a child of the one before, the first of the leaf.
   */
  appendMessages<M extends MessageLike>(messages: readonly M[]): Promise<string[]> {
    if (messages.length === 0) return Promise.reject(localError("invalid", "entries: nothing to append", "entries"));
    return this.appendDrafts(messages.map((message) => ({ type: "message", message })));
  }

  /** Records a thinking level ("off", "low", "high", ...). */
  async appendThinkingLevelChange(thinkingLevel: string): Promise<string> {
    return this.one({ type: "thinking_level_change", thinkingLevel });
  }

  /** Records a switch of provider and model. */
  async appendModelChange(provider: string, modelId: string): Promise<string> {
    return this.one({ type: "model_change", provider, modelId });
  }

  /**
   * Records a compaction: a summary of the path before `firstKeptEntryId`
   * (null: it keeps nothing, pi 1.1's retain-none, stored as the
   * compaction's own id). As pi 1.1 does, it checkpoints the system prompt
   * and tools of the context at the leaf (`systemMessage`) when the context
   * has any; `usage` is what the summarizing call cost.
   */
  appendCompaction(
    summary: string,
    firstKeptEntryId: string | null,
    tokensBefore: number,
    details?: unknown,
    fromHook?: boolean,
    usage?: Usage,
  ): Promise<string> {
    return this.serial(async () => {
      const system = await this.currentSystemMessage();
      const e = this.build({ type: "compaction", summary, firstKeptEntryId: "", tokensBefore, details, usage, fromHook }, false, this.leafId);
      const c = e as SessionEntry & { firstKeptEntryId: string; systemMessage?: SystemMessage };
      c.firstKeptEntryId = firstKeptEntryId ?? e.id;
      if (system) c.systemMessage = { ...system, timestamp: Date.parse(e.timestamp) };
      return (await this.write([e]))[0] as string;
    });
  }

  /**
   * pi 1.1's appendContextEdit: a branch-local edit of an earlier entry's
   * model content, on the active branch — a user, assistant or toolResult
   * message or a custom_message. `null` leaves it out of the context; a
   * string for an assistant or toolResult message becomes one text block,
   * as pi stores it. The entry itself never changes.
   */
  appendContextEdit(targetId: string, replacement: ContextEditReplacement): Promise<string> {
    return this.serial(async () => {
      const r = replacement as unknown;
      if (
        r !== null &&
        (typeof r !== "object" || !("content" in (r as object)) || (typeof (r as { content: unknown }).content !== "string" && !Array.isArray((r as { content: unknown }).content)))
      ) {
        throw localError("invalid", "replacement: Context edit replacement must be null or contain string/array content", "replacement");
      }
      await this.need(targetId);
      if (!this.getBranch().some((e) => e.id === targetId)) {
        throw localError("invalid", `targetId: Entry ${targetId} is not on the active branch`, "targetId");
      }
      const target = this.byId.get(targetId) as SessionEntry;
      const role = target.type === "custom_message" ? "custom" : roleOf(target);
      if (role !== "custom" && role !== "user" && role !== "assistant" && role !== "toolResult") {
        throw localError("invalid", `targetId: Entry ${targetId} does not contribute editable model content`, "targetId");
      }
      let stored = replacement;
      if (stored !== null && typeof stored.content === "string" && (role === "assistant" || role === "toolResult")) {
        stored = { content: [{ type: "text", text: stored.content }] };
      }
      return (await this.write([this.build({ type: "context_edit", targetId, replacement: stored }, false, this.leafId)]))[0] as string;
    });
  }

  /**
   * pi 1.1's appendUsage: what a model call outside the conversation cost
   * (a cache warm-up, a side task); never in the context. Returns the entry,
   * as pi does.
   */
  appendUsage(kind: string, provider: string, model: string, usage: Usage, note?: string): Promise<UsageEntry> {
    return this.appendDrafts([{ type: "usage", kind, provider, model, usage, ...(note ? { note } : {}) }]).then(
      (ids) => this.byId.get(ids[0] as string) as UsageEntry,
    );
  }

  /** Stores an extension's state (never in the LLM context). */
  async appendCustomEntry(customType: string, data?: unknown): Promise<string> {
    return this.one({ type: "custom", customType, data }, true);
  }

  /** Injects an extension's message into the context. */
  async appendCustomMessageEntry<C extends ContentBlock>(
    customType: string,
    content: string | readonly C[],
    display: boolean,
    details?: unknown,
  ): Promise<string> {
    return this.one({ type: "custom_message", customType, content, display, details }, true);
  }

  /** Names the session (runs of CR and LF folded to one space, then trimmed, as pi 1.1 stores it; the last one wins). */
  async appendSessionInfo(name: string): Promise<string> {
    return this.one({ type: "session_info", name: (this.pi11 ? name.replace(/[\r\n]+/g, " ") : name).trim() });
  }

  /** Sets (or with undefined or "" clears) the label of an entry, which must exist. */
  async appendLabelChange(targetId: string, label: string | undefined): Promise<string> {
    return this.serial(async () => {
      await this.need(targetId);
      return (await this.write([this.build({ type: "label", targetId, label }, false, this.leafId)]))[0] as string;
    });
  }

  /**
   * Moves the leaf to an entry (pi's branch): the next append is its child.
   * An id this Session does not know is looked up on the server first. With
   * a clientId the cursor moves too (PUT, compare-and-set on its revision):
   * if another writer moved it since, the leaf still moves but the cursor
   * stays, and the promise rejects with a ConflictError (field
   * `expectRevision`, `revision` the cursor's); {@link overwriteCursor}
   * takes it back.
   */
  branch(branchFromId: string): Promise<void> {
    return this.serial(async () => {
      await this.need(branchFromId);
      this.leafId = branchFromId;
      await this.moveCursor();
    });
  }

  /** Moves the leaf before the first entry (pi's resetLeaf): the next append is a new root. */
  resetLeaf(): Promise<void> {
    return this.serial(async () => {
      this.leafId = null;
      await this.moveCursor();
    });
  }

  /**
   * pi's branchWithSummary: moves the leaf to `branchFromId` (null: before
   * the first entry) and appends a branch_summary there. Its `fromId` is the
   * leaf left behind ("root" when there was none), as pi 1.1 writes it;
   * `usage` is what the summarizing call cost.
   */
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromHook?: boolean, usage?: Usage): Promise<string> {
    return this.serial(async () => {
      if (branchFromId !== null) await this.need(branchFromId);
      const prev = this.leafId;
      this.leafId = branchFromId;
      try {
        const fromId = (this.pi11 ? prev : branchFromId) ?? "root";
        const e = this.build({ type: "branch_summary", fromId, summary, details, usage, fromHook }, false, branchFromId);
        return (await this.write([e]))[0] as string;
      } catch (err) {
        this.leafId = prev;
        throw err;
      }
    });
  }

  /**
   * pi's createBranchedSession: a new session holding the path from the root
   * to `leafId`, its parent this one, as pi 1.1 writes it: label entries
   * are left out and the path re-chained over them (no orphans), a
   * compaction whose firstKeptEntryId is a left-out label points at the
   * next entry kept, and the labels of the path are re-created at its end.
   * A stored session is forked on the server (and the new one opened with
   * this Session's clientId, its cursor on its last entry); a pending one in
   * memory, as pi does, and stays pending until it holds what stores it.
   */
  createBranchedSession(leafId: string, opts: { signal?: AbortSignal } = {}): Promise<Session> {
    return this.serial(async () => {
      await this.need(leafId);
      if (this.flushed) {
        const r = await this.log.fork(this.header.id, leafId, { minSeq: this.seq || undefined, pi11: this.pi11, signal: opts.signal });
        const s = await Session.open(this.log, r.sessionId, { clientId: this.clientId, minSeq: r.lastSeq, signal: opts.signal, exclusive: this.exclusive });
        if (s.clientId && s.rev === undefined) await s.moveCursor();
        return s;
      }
      const s = Session.create(this.log, {
        cwd: this.header.cwd,
        parentSession: this.header.id,
        clientId: this.clientId,
        exclusive: this.exclusive,
        persist: this.persist,
      });
      const path = this.getBranch(leafId);
      for (const e of this.pi11 ? forkPath(path) : path.filter((e) => e.type !== "label")) s.addLocal(e);
      const ids = new Set(s.entries.map((e) => e.id));
      for (const [targetId, label] of this.labels) {
        if (!ids.has(targetId)) continue;
        s.addLocal(s.build({ type: "label", targetId, label }, false, s.leafId));
      }
      return s;
    });
  }

  /**
   * Reads what other writers appended since this Session last looked and
   * merges it into its view; the leaf stays. (A no-op while pending.)
   */
  sync(opts: { minSeq?: number; signal?: AbortSignal } = {}): Promise<number> {
    return this.serial(() => this.syncNow(opts));
  }

  /** Puts the cursor on this Session's leaf whatever its revision (after a cursor conflict: this worker owns the client id). */
  overwriteCursor(): Promise<void> {
    return this.serial(async () => {
      this.rev = undefined;
      await this.moveCursor();
    });
  }

  // ------------------------------------------------------------------ internals

  /** Whether a pending session is stored once it holds e (see {@link SessionLogOptions.pi11}). */
  private flushes(e: SessionEntry): boolean {
    const role = roleOf(e);
    return role === "assistant" || (this.pi11 && role === "user");
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private one(draft: Draft, custom = false): Promise<string> {
    return this.appendDrafts([draft], custom).then((ids) => ids[0] as string);
  }

  private appendDrafts(drafts: Draft[], custom = false): Promise<string[]> {
    return this.serial(async () => {
      const built: SessionEntry[] = [];
      const taken = { has: (id: string) => this.byId.has(id) || built.some((e) => e.id === id) };
      let parent = this.leafId;
      for (const d of drafts) {
        const e = this.build(d, custom, parent, taken);
        built.push(e);
        parent = e.id;
      }
      return this.write(built);
    });
  }

  /** An entry with its id, parent and timestamp, in pi's key order. */
  private build(d: Draft, custom: boolean, parentId: string | null, taken: { has(id: string): boolean } = this.byId): SessionEntry {
    const id = entryId(taken);
    const timestamp = new Date().toISOString();
    const { type, ...rest } = d;
    const e = custom ? { type, ...rest, id, parentId, timestamp } : { type, id, parentId, timestamp, ...rest };
    // JSON.stringify drops undefined members, as pi's file does; drop them here too.
    return JSON.parse(JSON.stringify(e)) as SessionEntry;
  }

  private addLocal(e: SessionEntry): void {
    this.entries.push(e);
    this.byId.set(e.id, e);
    this.leafId = e.id;
    this.applyLabel(e);
  }

  private applyLabel(e: SessionEntry): void {
    if (e.type !== "label") return;
    const target = e["targetId"] as string;
    const label = e["label"];
    if (typeof label === "string" && label) {
      this.labels.set(target, label);
      this.labelTimes.set(target, e.timestamp);
    } else {
      this.labels.delete(target);
      this.labelTimes.delete(target);
    }
  }

  private rollback(batch: SessionEntry[], leaf: string | null): void {
    const gone = new Set(batch.map((e) => e.id));
    this.entries = this.entries.filter((e) => !gone.has(e.id) || this.seqs.has(e.id));
    for (const id of gone) if (!this.seqs.has(id)) this.byId.delete(id);
    this.labels.clear();
    this.labelTimes.clear();
    for (const e of this.entries) this.applyLabel(e);
    this.leafId = leaf;
  }

  /** Adds `batch` to the view and stores it: the delayed flush, or one append. On error the view is as before. */
  private async write(batch: SessionEntry[]): Promise<string[]> {
    const leaf = this.leafId;
    if (!this.flushed) {
      for (const e of batch) this.addLocal(e);
      if (!this.persist || !this.entries.some((e) => this.flushes(e))) return batch.map((e) => e.id);
      try {
        const r = await this.log.createSession(this.header, this.entries, { client: this.clientId });
        this.flushed = true;
        for (const x of r.entries) this.seqs.set(x.id, x.seq);
        this.seq = this.synced = r.lastSeq;
        if (r.cursor) this.rev = r.cursor.revision;
        else if (this.clientId) await this.moveCursor(); // a server without create's "client"
      } catch (err) {
        if (!this.flushed) this.rollback(batch, leaf);
        throw err;
      }
      return batch.map((e) => e.id);
    }
    for (let attempt = 0; ; attempt++) {
      for (const e of batch) this.addLocal(e);
      try {
        const r = await this.log.append(this.header.id, batch, {
          client: this.clientId,
          expectLastSeq: this.exclusive ? this.seq : undefined,
        });
        for (const x of r.entries) this.seqs.set(x.id, x.seq);
        // Only a compare-and-swap proves nobody else wrote in between, so
        // only then is the view known whole up to the new lastSeq.
        if (this.exclusive) this.synced = r.lastSeq;
        this.seq = Math.max(this.seq, r.lastSeq);
        this.rev = r.cursor ? r.cursor.revision : undefined;
        return batch.map((e) => e.id);
      } catch (err) {
        this.rollback(batch, leaf);
        if (!(err instanceof ConflictError) || this.exclusive || err.field === "expectLastSeq" || attempt >= 3) throw err;
        // An id another writer took: read what they wrote, draw new ids, again.
        await this.syncNow({ minSeq: err.lastSeq });
        const same = (e: SessionEntry) => JSON.stringify(this.byId.get(e.id)) === JSON.stringify(e);
        if (batch.every(same)) {
          // All of it is stored already, as sent (an earlier attempt whose reply was lost).
          this.leafId = (batch[batch.length - 1] as SessionEntry).id;
          return batch.map((e) => e.id);
        }
        if (batch.some(same) || !batch.some((e) => this.byId.has(e.id))) throw err;
        batch = this.redraw(batch);
      }
    }
  }

  /** The batch with fresh ids (and its chain's parents following them). */
  private redraw(batch: SessionEntry[]): SessionEntry[] {
    const renamed = new Map<string, string>();
    const out: SessionEntry[] = [];
    const taken = { has: (id: string) => this.byId.has(id) || renamed.has(id) || out.some((e) => e.id === id) };
    for (const e of batch) {
      const id = entryId(taken);
      renamed.set(e.id, id);
      const parentId = e.parentId !== null && renamed.has(e.parentId) ? (renamed.get(e.parentId) as string) : e.parentId;
      out.push({ ...e, id, parentId } as SessionEntry);
    }
    return out;
  }

  private async syncNow(opts: { minSeq?: number; signal?: AbortSignal } = {}): Promise<number> {
    if (!this.flushed) return 0;
    const minSeq = Math.max(opts.minSeq ?? 0, this.seq) || undefined;
    const all = await this.log.allEntries(this.header.id, { afterSeq: this.synced, minSeq, signal: opts.signal });
    let merged = 0;
    const leaf = this.leafId;
    for (const { seq, entry } of all.entries) {
      this.seqs.set(entry.id, seq);
      if (this.byId.has(entry.id)) continue;
      this.addLocal(entry);
      merged++;
    }
    this.leafId = leaf;
    if (merged > 0) {
      const order = (e: SessionEntry) => this.seqs.get(e.id) ?? Number.MAX_SAFE_INTEGER;
      this.entries.sort((a, b) => order(a) - order(b));
    }
    this.synced = Math.max(this.synced, all.lastSeq);
    this.seq = Math.max(this.seq, all.lastSeq);
    return merged;
  }

  /** Fails with NotFoundError unless the entry is known here or, after a sync, on the server. */
  private async need(id: string): Promise<void> {
    if (this.byId.has(id)) return;
    await this.syncNow();
    if (!this.byId.has(id)) throw localError("not_found", `Entry ${id} not found`, "entryId");
  }

  /** Writes the leaf to the cursor (a stored session with a clientId only). */
  private async moveCursor(): Promise<void> {
    if (!this.clientId || !this.flushed) return;
    try {
      const c = await this.log.setCursor(this.header.id, this.clientId, this.leafId, {
        expectRevision: this.rev,
        minSeq: this.seq || undefined,
      });
      this.rev = c.revision;
    } catch (err) {
      if (!(err instanceof ConflictError) || err.field !== "expectRevision") throw err;
      // Our own earlier move whose reply was lost, or another writer that
      // put the cursor where we are: either way it is right.
      const cur = await this.log.getCursor(this.header.id, this.clientId).catch(() => undefined);
      if (cur && cur.leafId === this.leafId) {
        this.rev = cur.revision;
        return;
      }
      throw err;
    }
  }
}

/**
 * The path of a fork as pi 1.1 writes it: labels left out, each entry's
 * parent the entry kept before it, and a compaction's firstKeptEntryId
 * that names a left-out label moved to the next entry kept.
 */
function forkPath(path: readonly SessionEntry[]): SessionEntry[] {
  const kept = path.filter((e) => e.type !== "label");
  const dropped = new Set(path.filter((e) => e.type === "label").map((e) => e.id));
  return kept.map((e, i) => {
    const out = { ...e, parentId: i === 0 ? null : (kept[i - 1] as SessionEntry).id } as SessionEntry;
    const first = e["firstKeptEntryId"];
    if (e.type === "compaction" && typeof first === "string" && dropped.has(first)) {
      const at = path.findIndex((x) => x.id === first);
      const next = path.slice(at + 1).find((x) => x.type !== "label");
      if (next) out["firstKeptEntryId"] = next.id;
    }
    return out;
  });
}

/**
 * The header's cwd as pi 1.1's resolvePath stores it: absolute (against
 * the process's directory where there is one, as pi's), "." and ".."
 * resolved, no doubled or trailing slash ("/a//b/" is "/a/b").
 */
function resolveCwd(cwd: string): string {
  if (cwd === "") return cwd;
  const proc = (globalThis as { process?: { cwd?: () => string } }).process;
  const p = !cwd.startsWith("/") && typeof proc?.cwd === "function" ? `${proc.cwd()}/${cwd}` : cwd;
  const abs = p.startsWith("/");
  const parts: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === ".." && parts.length > 0 && parts[parts.length - 1] !== "..") parts.pop();
    else if (seg !== ".." || !abs) parts.push(seg);
  }
  return (abs ? "/" : "") + parts.join("/") || (abs ? "/" : ".");
}

/** See {@link Session.currentSystemMessage}. */
export function replaySystemMessages(messages: readonly AgentMessage[]): SystemMessage | undefined {
  const content: string[] = [];
  const sections = new Map<string, string>();
  const tools = new Map<string, ToolDeclaration>();
  let timestamp: number | undefined;
  for (const m of messages) {
    if (m.role !== "system") continue;
    const sm = m as SystemMessage;
    timestamp ??= sm.timestamp;
    const text = textOf(sm.content as unknown);
    if (text.length > 0) content.push(text);
    for (const [name, value] of Object.entries(sm.sections ?? {})) {
      if (value === null) sections.delete(name);
      else sections.set(name, value);
    }
    for (const t of sm.toolsRemoved ?? []) tools.delete(t.name);
    for (const t of sm.toolsAdded ?? []) tools.set(t.name, t);
  }
  if (timestamp === undefined && tools.size === 0) return undefined;
  return {
    role: "system",
    content: content.join("\n\n"),
    ...(sections.size > 0 ? { sections: Object.fromEntries(sections) } : {}),
    ...(tools.size > 0 ? { toolsAdded: [...tools.values()] } : {}),
    timestamp: timestamp ?? 0,
  };
}

/** pi-ai's contentText: a string as it is, else the text blocks joined by newlines. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b): b is { type: "text"; text: string } => b?.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join("\n");
}

function checkClientId(id: string): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    throw localError("invalid", `client: must match [A-Za-z0-9_-]{1,64}: ${JSON.stringify(id)}`, "client");
  }
}
