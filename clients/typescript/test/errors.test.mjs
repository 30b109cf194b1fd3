// Every error kind pi-node can be made to answer for real, and the decoding
// of the rest.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ConflictError,
  ForbiddenError,
  InternalError,
  InvalidError,
  NotFoundError,
  SessionLog,
  SessionLogError,
  TimeoutError,
  TooLargeError,
  UnauthorizedError,
  UnavailableError,
  decodeError,
  isRetryable,
} from "../dist/index.js";
import { assistant, freePort, startNode, user } from "./helpers.mjs";

const readerToken = "reader-token-0123456789";
let node, log;
before(async () => {
  node = await startNode({
    tokens: [{ name: "dashboard", token: readerToken, scopes: ["read"] }],
    args: ["--min-seq-timeout", "300ms"],
  });
  log = new SessionLog({ baseUrl: node.url, token: node.token, retry: { backoffMs: 5 } });
});
after(async () => node && (await node.stop()));

async function stored() {
  const s = log.create({ cwd: "/t/errors" });
  await s.appendMessage(user("q"));
  await s.appendMessage(assistant("a"));
  return s;
}

function check(err, cls, code, status) {
  assert.ok(err instanceof cls, `${err} is not a ${cls.name}`);
  assert.ok(err instanceof SessionLogError);
  assert.equal(err.code, code);
  assert.equal(err.status, status);
  assert.equal(err.name, cls.name);
  assert.ok(err.message.length > 0);
  return err;
}

test("not_found: an unknown session names sessionId", async () => {
  const err = await log.get("01a22bdc-6ce8-7741-8406-3ad384bc1b99").catch((e) => e);
  check(err, NotFoundError, "not_found", 404);
  assert.equal(err.field, "sessionId");
  const e2 = await log.context((await stored()).getSessionId(), { leaf: "nope1234" }).catch((e) => e);
  check(e2, NotFoundError, "not_found", 404);
  assert.equal(e2.field, "leaf");
});

test("conflict: create of an existing id, with field header.id", async () => {
  const s = await stored();
  const again = log.create({ id: s.getSessionId() });
  await again.appendMessage(user("q"));
  const err = await again.appendMessage(assistant("a")).catch((e) => e);
  check(err, ConflictError, "conflict", 409);
  assert.equal(err.field, "header.id");
  assert.equal(again.isFlushed(), false);
  assert.equal(again.getEntries().length, 1, "the failed write is rolled back");
});

test("conflict: expectLastSeq stale, with lastSeq", async () => {
  const s = await stored();
  const err = await log.append(s.getSessionId(), [{ type: "message", message: user("x") }], { expectLastSeq: 1 }).catch((e) => e);
  check(err, ConflictError, "conflict", 409);
  assert.equal(err.lastSeq, s.lastSeq);
});

test("invalid: an unknown parent and a bad entry name their field", async () => {
  const s = await stored();
  const err = await log.append(s.getSessionId(), [{ type: "message", parentId: "zzzz", message: user("x") }]).catch((e) => e);
  check(err, InvalidError, "invalid", 400);
  assert.equal(err.field, "entries[0].parentId");
  const e2 = await log.append(s.getSessionId(), [{ id: "abcd0001", type: "model_change", provider: "p" }]).catch((e) => e);
  check(e2, InvalidError, "invalid", 400);
  assert.equal(e2.field, "entries[0].modelId");
  const e3 = await log.open("NOT-A-UUID").catch((e) => e);
  check(e3, InvalidError, "invalid", 400);
  assert.equal(e3.field, "sessionId");
});

test("too_large: an entry over the record limit", async () => {
  const s = await stored();
  const big = "x".repeat(8 * 1024 * 1024 + 1024);
  const err = await s.appendMessage(user(big)).catch((e) => e);
  check(err, TooLargeError, "too_large", 413);
  assert.equal(err.field, "entries[0]");
  assert.equal(s.getEntries().length, 2, "nothing of it is held");
});

test("unauthorized: a wrong token", async () => {
  const bad = new SessionLog({ baseUrl: node.url, token: "wrong" });
  const err = await bad.list().catch((e) => e);
  check(err, UnauthorizedError, "unauthorized", 401);
  const none = new SessionLog({ baseUrl: node.url });
  check(await none.list().catch((e) => e), UnauthorizedError, "unauthorized", 401);
});

test("forbidden: a read-only scoped token cannot write", async () => {
  const s = await stored();
  const reader = new SessionLog({ baseUrl: node.url, token: readerToken });
  const page = await reader.list({ cwd: "/t/errors" });
  assert.ok(page.sessions.length > 0, "it can read");
  const err = await reader.append(s.getSessionId(), [{ type: "message", message: user("x") }]).catch((e) => e);
  check(err, ForbiddenError, "forbidden", 403);
  assert.match(err.message, /write/);
  const w = reader.create({ cwd: "/t/errors" });
  await w.appendMessage(user("q"));
  check(await w.appendMessage(assistant("a")).catch((e) => e), ForbiddenError, "forbidden", 403);
});

test("timeout: a read waiting for a sequence the node never applies (retried, then thrown)", async () => {
  const s = await stored();
  const impatient = new SessionLog({ baseUrl: node.url, token: node.token, retry: { attempts: 2, backoffMs: 5 } });
  const err = await impatient.get(s.getSessionId(), { minSeq: 1e9 }).catch((e) => e);
  check(err, TimeoutError, "timeout", 504);
  assert.match(err.message, /1000000000/);
});

test("unavailable: nothing listens (no reply: status 0, after the retries)", async () => {
  const port = await freePort();
  const gone = new SessionLog({ baseUrl: `http://127.0.0.1:${port}`, retry: { attempts: 2, backoffMs: 5 } });
  const err = await gone.list().catch((e) => e);
  check(err, UnavailableError, "unavailable", 0);
  assert.ok(err.cause, "the network error is its cause");
});

test("decodeError maps every code (and bodies that are not the API's)", () => {
  const cases = [
    [400, "invalid", InvalidError],
    [401, "unauthorized", UnauthorizedError],
    [403, "forbidden", ForbiddenError],
    [404, "not_found", NotFoundError],
    [409, "conflict", ConflictError],
    [413, "too_large", TooLargeError],
    [503, "unavailable", UnavailableError],
    [504, "timeout", TimeoutError],
    [500, "internal", InternalError],
  ];
  for (const [status, code, cls] of cases) {
    const body = JSON.stringify({ error: { code, message: `${code}: it`, field: "f", lastSeq: 9, revision: 2 } });
    const e = decodeError(status, body);
    check(e, cls, code, status);
    assert.equal(e.message, `${code}: it`);
    assert.equal(e.field, "f");
    assert.equal(e.lastSeq, 9);
    assert.equal(e.revision, 2);
    // The same status without the API's body: by the status.
    check(decodeError(status, "<html>proxy</html>"), cls, code, status);
  }
  const e = decodeError(409, '{"error":{"code":"conflict","message":"expectLastSeq: conflict","field":"expectLastSeq","lastSeq":9}}');
  assert.equal(e.revision, undefined);
  check(decodeError(502, ""), UnavailableError, "unavailable", 502);
  check(decodeError(418, "teapot"), InvalidError, "invalid", 418);
  assert.equal(isRetryable(decodeError(503, "")), true);
  assert.equal(isRetryable(decodeError(504, "")), true);
  assert.equal(isRetryable(decodeError(500, "")), true);
  assert.equal(isRetryable(decodeError(409, "")), false);
  assert.equal(isRetryable(decodeError(400, "")), false);
  assert.equal(isRetryable(new Error("x")), false);
});

test("unavailable and timeout replies are retried; the last error is thrown", async () => {
  let calls = 0;
  const fake = async () => {
    calls++;
    if (calls === 1) throw new TypeError("fetch failed");
    if (calls === 2) return new Response(JSON.stringify({ error: { code: "unavailable", message: "no quorum" } }), { status: 503 });
    if (calls === 3) return new Response(JSON.stringify({ error: { code: "timeout", message: "minSeq 9 not applied" } }), { status: 504 });
    return new Response(JSON.stringify({ sessions: [] }), { status: 200 });
  };
  const c = new SessionLog({ baseUrl: "http://x.invalid", fetch: fake, retry: { backoffMs: 1 } });
  assert.deepEqual(await c.list(), { sessions: [] });
  assert.equal(calls, 4);
  calls = 0;
  const down = new SessionLog({ baseUrl: "http://x.invalid", fetch: async () => { calls++; throw new TypeError("fetch failed"); }, retry: { attempts: 3, backoffMs: 1 } });
  const err = await down.list().catch((e) => e);
  check(err, UnavailableError, "unavailable", 0);
  assert.equal(calls, 3);
  const internal = new SessionLog({ baseUrl: "http://x.invalid", fetch: async () => new Response('{"error":{"code":"internal","message":"internal error"}}', { status: 500 }), retry: { attempts: 2, backoffMs: 1 } });
  check(await internal.list().catch((e) => e), InternalError, "internal", 500);
  const conflict = new SessionLog({ baseUrl: "http://x.invalid", fetch: async () => { calls++; return new Response('{"error":{"code":"conflict","message":"c"}}', { status: 409 }); } });
  calls = 0;
  check(await conflict.list().catch((e) => e), ConflictError, "conflict", 409);
  assert.equal(calls, 1, "a conflict is not retried");
});
