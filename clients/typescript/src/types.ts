/** pi's session shapes (pi-mono packages/coding-agent session-manager.ts) and pi-node's replies (docs/API.md). */

/** pi's AgentMessage as read back: any object with a role (user, assistant, toolResult, bashExecution, custom, ...). */
export interface AgentMessage {
  role: string;
  [key: string]: unknown;
}

/**
 * What the append methods take: any object with a role. No index
 * signature, so pi-ai's `UserMessage`, `AssistantMessage` and
 * `ToolResultMessage` (interfaces, which TypeScript gives none) pass as
 * they are; pi-node checks the roles it knows (docs/API.md).
 */
export interface MessageLike {
  role: string;
}

/** A text or image block of a user message, a tool result or a custom message (pi-ai's TextContent, ImageContent). */
export type ContentBlock =
  | { type: "text"; text: string; textSignature?: string }
  | { type: "image"; data: string; mimeType: string };

/** The first line of a pi session file. */
export interface SessionHeader {
  type: "session";
  version?: number;
  id: string;
  timestamp: string;
  cwd: string;
  parentSession?: string;
  [key: string]: unknown;
}

/** What every entry has. */
export interface SessionEntryBase {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
  [key: string]: unknown;
}

export interface SessionMessageEntry extends SessionEntryBase {
  type: "message";
  message: AgentMessage;
}
export interface ThinkingLevelChangeEntry extends SessionEntryBase {
  type: "thinking_level_change";
  thinkingLevel: string;
}
export interface ModelChangeEntry extends SessionEntryBase {
  type: "model_change";
  provider: string;
  modelId: string;
}
/**
 * pi-ai's Usage: tokens and cost of one model call (pi 1.1 records it on
 * assistant messages, compactions, branch summaries and usage entries).
 */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  [key: string]: unknown;
}

/** A tool as a system message declares it (pi-ai's Tool: name, description, JSON schema). */
export interface ToolDeclaration {
  name: string;
  description?: string;
  parameters?: unknown;
  [key: string]: unknown;
}

/**
 * pi 1.1's system message: the system prompt as messages of the transcript.
 * `content` is appended to the prompt, `sections` patch named sections
 * (null removes one), tools are added and removed by name.
 */
export interface SystemMessage {
  role: "system";
  content: string;
  sections?: Record<string, string | null>;
  toolsAdded?: ToolDeclaration[];
  toolsRemoved?: ToolDeclaration[];
  timestamp: number;
  [key: string]: unknown;
}

export interface CompactionEntry extends SessionEntryBase {
  type: "compaction";
  summary: string;
  /** The first entry kept after the summary; the compaction's own id when it keeps nothing (pi 1.1's retain-none). */
  firstKeptEntryId: string;
  tokensBefore: number;
  details?: unknown;
  /** pi 1.1: what the summarizing call cost. */
  usage?: Usage;
  fromHook?: boolean;
  /** pi 1.1: the system prompt and tools at the compaction, replayed into one message (the context emits it before the summary). */
  systemMessage?: SystemMessage;
}
export interface BranchSummaryEntry extends SessionEntryBase {
  type: "branch_summary";
  /** The leaf that was left (pi 1.1; "root" when there was none). pi 0.73.1 wrote the target here. */
  fromId: string;
  summary: string;
  details?: unknown;
  usage?: Usage;
  fromHook?: boolean;
}
/** pi 1.1: a branch-local edit of an earlier entry's model content (null: leave the entry out of the context). */
export interface ContextEditEntry extends SessionEntryBase {
  type: "context_edit";
  targetId: string;
  replacement: { content: string | ContentBlock[] } | null;
}
/** pi 1.1: usage of a model call outside the conversation (a cache warm-up, a side task); never in the context. */
export interface UsageEntry extends SessionEntryBase {
  type: "usage";
  kind: string;
  provider: string;
  model: string;
  usage: Usage;
  note?: string;
}
export interface CustomEntry extends SessionEntryBase {
  type: "custom";
  customType: string;
  data?: unknown;
}
export interface LabelEntry extends SessionEntryBase {
  type: "label";
  targetId: string;
  label?: string;
}
export interface SessionInfoEntry extends SessionEntryBase {
  type: "session_info";
  name?: string;
}
export interface CustomMessageEntry extends SessionEntryBase {
  type: "custom_message";
  customType: string;
  content: string | ContentBlock[];
  details?: unknown;
  display: boolean;
}

/** One entry of a session (pi's SessionEntry; entry types pi does not know pass too). */
export type SessionEntry =
  | SessionMessageEntry
  | ThinkingLevelChangeEntry
  | ModelChangeEntry
  | CompactionEntry
  | BranchSummaryEntry
  | CustomEntry
  | CustomMessageEntry
  | LabelEntry
  | SessionInfoEntry
  | ContextEditEntry
  | UsageEntry;

/** pi's getTree() node. */
export interface SessionTreeNode {
  entry: SessionEntry;
  children: SessionTreeNode[];
  label?: string;
  labelTimestamp?: string;
}

/** What pi sends the model at a leaf: GET /v1/sessions/{id}/context or POST /v1/context. */
export interface SessionContext {
  leafId: string | null;
  path: string[];
  /** pi 1.1's buildContextEntries: the entries selected for the context, before context edits apply (a pi-node before 1.1's rules omits it). */
  contextEntryIds?: string[];
  thinkingLevel: string;
  model: { provider: string; modelId: string } | null;
  messages: AgentMessage[];
}

/** One client's leaf in one session. */
export interface Cursor {
  client: string;
  leafId: string | null;
  seq: number;
  revision: number;
  updatedAt: string;
}

/** A session as `list` shows it. */
export interface SessionInfo {
  sessionId: string;
  name: string | null;
  cwd: string;
  created: string;
  modified: string;
  entryCount: number;
  lastSeq: number;
  parentSession: string | null;
  firstMessage?: string;
  [key: string]: unknown;
}

/** A session as `get` shows it. */
export interface SessionDetails extends SessionInfo {
  header: SessionHeader;
  labels: Record<string, string>;
  leafId: string | null;
  /** With `include: "usage"`: pi 1.1's getUsageCostBreakdown over every entry, the highest cost first. */
  usageBreakdown?: UsageRow[];
}

/** One row of pi 1.1's usage breakdown: `provider/model`, or `Tools/summaries`. */
export interface UsageRow {
  key: string;
  /** The sum of usage.cost.total (dollars). */
  cost: number;
  /** input + output + cacheRead + cacheWrite. */
  tokens: number;
}

/** One page of `list`. */
export interface SessionPage {
  sessions: SessionInfo[];
  /** The cursor of the next page; absent on the last. */
  next?: string;
}

/** A page of search hits, best first. */
export interface SearchReply {
  hits: SearchHit[];
  /** An estimate of the hits of the whole query, every page (with `branch: "path"`, before the entries off the path are left out). */
  total: number;
  /** The cursor of the next page; absent on the last. */
  next?: string;
}

/** An entry that matches a search, with its session's name and cwd as they are now. */
export interface SearchHit {
  sessionId: string;
  /** The session's name; absent when it has none. */
  name?: string;
  cwd: string;
  entryId: string;
  /** The entry's type (message, compaction, branch_summary, custom_message, ...). */
  type: string;
  /** A message's role (`custom` for a custom_message); absent for other entries. */
  role?: string;
  /** The entry's timestamp, as stored. */
  timestamp: string;
  /** Whether the entry is on its session's default path (root to its last entry); false on an abandoned branch. */
  onPath: boolean;
  /** Relevance, higher is better; comparable only within one query. */
  score: number;
  /** Text around the matches: the parts' texts joined; `match` marks the words the query matched. */
  snippet: SnippetPart[];
}

/** A piece of a hit's snippet. */
export interface SnippetPart {
  text: string;
  match?: boolean;
}

/** An entry with its stream sequence. */
export interface SeqEntry {
  seq: number;
  entry: SessionEntry;
}

/** The reply of create and append. */
export interface WriteResult {
  sessionId?: string;
  lastSeq: number;
  entries: { id: string; seq: number }[];
  cursor?: Cursor;
}

/** The reply of import. */
export interface ImportResult {
  sessionId: string;
  entryCount: number;
  lastSeq: number;
  sourceVersion: number;
  skipped: { line: number; field?: string; reason: string }[];
}

/** The reply of fork. */
export interface ForkResult {
  sessionId: string;
  lastSeq: number;
}

/** The reply of delete: what the erasure removed. */
export interface DeleteResult {
  sessionId: string;
  /** Records of the log erased: the header and every entry (0 for a session only in the archive). */
  records: number;
  /** Archived copies erased. */
  archivedCopies: number;
  /** The session's last sequence before the erasure (0 for a session only in the archive). */
  lastSeq: number;
}

/**
 * What a read reflects: pi-node's freshness headers, taken with the data
 * (docs/API.md, Freshness of reads). Pass `appliedSeq` as `minSeq` to a
 * later read of the same session for monotonic reads on any node.
 */
export interface Freshness {
  /** `Pi-Applied-Seq`: every record of the log up to this sequence is in the body (0 when the reply had none). */
  appliedSeq: number;
  /** `Pi-Lag`: records the node knew to exist and had not applied; `"unknown"` before it learned the log's end (or when the reply had none). */
  lag: number | "unknown";
  /** `Pi-Stale`: the node has not been caught up with the log for over 1 s (true too when the reply had no freshness headers). */
  stale: boolean;
  /** `Pi-Node`: the node that answered. */
  node?: string;
  /** `Pi-Served-By`: the holder a node that holds a share of the shards forwarded the read to; absent when it answered itself. */
  servedBy?: string;
}

/** A read's reply with the freshness of its answer (a non-enumerable property: `JSON.stringify` and spreads leave it out). */
export type Fresh<T> = T & { readonly freshness: Freshness };
