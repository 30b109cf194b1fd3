/**
 * @pifleet/sessionlog — a TypeScript client of sessionlog's pi-node HTTP
 * API: pi's SessionManager on a replicated log. Zero dependencies; only
 * web-standard APIs (fetch, ReadableStream, TextDecoder, AbortController,
 * crypto.getRandomValues).
 */
export { SessionLog } from "./client.js";
export type {
  AppendOptions,
  LeafOptions,
  ListOptions,
  RequestOptions,
  RetryOptions,
  SearchOptions,
  SessionLogOptions,
  WatchOptions,
} from "./client.js";
export { Session, replaySystemMessages } from "./session.js";
export type { ContextEditReplacement, ContextOptions, ContinueOptions, CreateOptions, ForkFromOptions, InMemoryOptions, OpenOptions } from "./session.js";
export {
  CertificateError,
  ConflictError,
  ForbiddenError,
  InternalError,
  InvalidError,
  NotFoundError,
  SessionLogError,
  TimeoutError,
  TooLargeError,
  UnauthorizedError,
  UnavailableError,
  codeForStatus,
  decodeError,
  isRetryable,
  makeError,
} from "./errors.js";
export type { ErrorBody, ErrorCode } from "./errors.js";
export { SSEParser } from "./sse.js";
export type { SSEEvent } from "./sse.js";
export { entryId, uuidv7 } from "./ids.js";
export * from "./types.js";
