/**
 * Typed errors: one class per error code of pi-node's API (docs/API.md
 * "Errors"), all extending {@link SessionLogError}.
 */

/** The error codes of pi-node's API. */
export type ErrorCode =
  | "not_found"
  | "conflict"
  | "invalid"
  | "too_large"
  | "unavailable"
  | "unauthorized"
  | "forbidden"
  | "timeout"
  | "internal"
  | "certificate";

/** The body of every error reply: `{"error":{code,message,field?,lastSeq?,revision?}}`. */
export interface ErrorBody {
  error: {
    code: string;
    message: string;
    field?: string;
    lastSeq?: number;
    revision?: number;
  };
}

/** Every error the client throws for a failed request. */
export class SessionLogError extends Error {
  /** The API's error code. */
  readonly code: ErrorCode;
  /** The HTTP status (0: no reply reached the client, e.g. a network error). */
  readonly status: number;
  /** The input the error is about (`entries[0].parentId`, `sessionId`, `header.id`, ...). */
  readonly field: string | undefined;
  /** On a conflict about a session: its last sequence when the conflict happened. */
  readonly lastSeq: number | undefined;
  /** On a cursor conflict: the cursor's current revision. */
  readonly revision: number | undefined;

  constructor(
    code: ErrorCode,
    status: number,
    message: string,
    opts: { field?: string; lastSeq?: number; revision?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.field = opts.field;
    this.lastSeq = opts.lastSeq;
    this.revision = opts.revision;
  }
}

/** 404: no such session, entry, leaf, cursor or route. */
export class NotFoundError extends SessionLogError {}
/** 409: the session id exists; a stale expectLastSeq (lastSeq) or expectRevision (revision); an id stored with other content. */
export class ConflictError extends SessionLogError {}
/** 400: malformed JSON, bad id, unknown parent, an entry not of pi's shapes, bad parameter; `field` names the input. */
export class InvalidError extends SessionLogError {}
/** 413: body or entry over the limit, more entries than one atomic batch. */
export class TooLargeError extends SessionLogError {}
/** 503 (or no reply at all): JetStream unreachable, no quorum, the node stopping. Retried by the client. */
export class UnavailableError extends SessionLogError {}
/** 401: token missing or wrong. */
export class UnauthorizedError extends SessionLogError {}
/** 403: the token lacks the operation's scope, or a tenant's cwd is outside its prefix. */
export class ForbiddenError extends SessionLogError {}
/** 504: what a read must reflect (minSeq, ...) was not applied in time. Retried by the client. */
export class TimeoutError extends SessionLogError {}
/** 500: anything else. */
export class InternalError extends SessionLogError {}
/**
 * No reply (status 0) because the server's TLS certificate is not trusted:
 * signed by a private CA the runtime does not know, for another name, or
 * expired. The client's own code, not the API's. Not retried: no retry can
 * change it. In Node.js, trust a private CA with `NODE_EXTRA_CA_CERTS=ca.pem`.
 * A browser gives no reason for a failed fetch: there it is an
 * {@link UnavailableError}.
 */
export class CertificateError extends SessionLogError {}

// Node's (OpenSSL's) codes of a certificate that failed verification.
const certificateCodes = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The certificate code in a failed fetch's cause chain (Node's fetch: TypeError "fetch failed", its cause the TLS error), if any. */
export function certificateProblem(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && certificateCodes.has(code)) return code;
  }
  return undefined;
}

type ErrorClass = new (
  code: ErrorCode,
  status: number,
  message: string,
  opts?: { field?: string; lastSeq?: number; revision?: number; cause?: unknown },
) => SessionLogError;

const byCode: Record<ErrorCode, ErrorClass> = {
  not_found: NotFoundError,
  conflict: ConflictError,
  invalid: InvalidError,
  too_large: TooLargeError,
  unavailable: UnavailableError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  timeout: TimeoutError,
  internal: InternalError,
  certificate: CertificateError,
};

const byStatus: Record<number, ErrorCode> = {
  400: "invalid",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "too_large",
  500: "internal",
  502: "unavailable",
  503: "unavailable",
  504: "timeout",
};

/** The code an HTTP status stands for when a body does not say (a proxy's reply, say). */
export function codeForStatus(status: number): ErrorCode {
  const c = byStatus[status];
  if (c) return c;
  if (status >= 500) return "internal";
  return "invalid";
}

/** Makes the error of `code` (an unknown code: by the status). */
export function makeError(
  code: string,
  status: number,
  message: string,
  opts: { field?: string; lastSeq?: number; revision?: number; cause?: unknown } = {},
): SessionLogError {
  const known = (code in byCode ? code : codeForStatus(status)) as ErrorCode;
  return new byCode[known](known, status, message, opts);
}

/**
 * Decodes an error reply: its status and body text. A body that is not
 * the API's error object (a proxy's HTML, an empty 502) gives the error of
 * the status, with the text as its message.
 */
export function decodeError(status: number, body: string): SessionLogError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const e = (parsed as Partial<ErrorBody> | undefined)?.error;
  if (e && typeof e === "object" && typeof e.code === "string") {
    const opts: { field?: string; lastSeq?: number; revision?: number } = {};
    if (typeof e.field === "string") opts.field = e.field;
    if (typeof e.lastSeq === "number") opts.lastSeq = e.lastSeq;
    if (typeof e.revision === "number") opts.revision = e.revision;
    return makeError(e.code, status, typeof e.message === "string" ? e.message : e.code, opts);
  }
  const text = body.trim().slice(0, 200);
  return makeError(codeForStatus(status), status, text ? `HTTP ${status}: ${text}` : `HTTP ${status}`);
}

/** Whether a failed request may be sent again as it was: no reply, a 5xx, or the codes unavailable and timeout. */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof SessionLogError) || err instanceof CertificateError) return false;
  return err.status === 0 || err.status >= 500 || err.code === "unavailable" || err.code === "timeout";
}
