// Concurrency, idempotent retry, the delayed flush's crash case and watch
// resume, against a real pi-node (and a proxy in front of it).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ConflictError, NotFoundError, SessionLog } from "../dist/index.js";
import { assistant, startNode, startProxy, user, waitFor } from "./helpers.mjs";

let node, log;
before(async () => {
  node = await startNode();
  log = new SessionLog({ baseUrl: node.url, token: node.token });
});
after(async () => node && (await node.stop()));

async function stored(cwd) {
  const s = log.create({ cwd, clientId: "w1" });
  await s.appendMessage(user("q"));
  await s.appendMessage(assistant("a"));
  return s;
}

test("two clients with explicit parents on one session: a branch, no error", async () => {
  const a = await stored("/t/shared");
  const b = await log.open(a.getSessionId(), { clientId: "w2" });
  assert.equal(b.getLeafId(), a.getLeafId());
  const base = a.getLeafId();
  const [x, y] = await Promise.all([a.appendMessage(user("from a")), b.appendMessage(user("from b"))]);
  assert.equal(a.getEntry(x).parentId, base);
  assert.equal(b.getEntry(y).parentId, base);
  // Each client's cursor is its own leaf.
  assert.equal((await log.getCursor(a.getSessionId(), "w1")).leafId, x);
  assert.equal((await log.getCursor(a.getSessionId(), "w2")).leafId, y);
  // a sees b's entry after a sync: two children of the base.
  const merged = await a.sync();
  assert.equal(merged, 1);
  assert.deepEqual(a.getChildren(base).map((e) => e.id).sort(), [x, y].sort());
  assert.equal(a.getLeafId(), x, "the leaf stays");
  const ids = a.getEntries().map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length);
  // b can branch to a's entry: looked up on the server.
  await b.branch(x);
  assert.equal((await log.getCursor(a.getSessionId(), "w2")).leafId, x);
});

test("exclusive: a stale expectLastSeq is a ConflictError with lastSeq", async () => {
  const s = log.create({ cwd: "/t/owner", clientId: "owner", exclusive: true });
  await s.appendMessage(user("q"));
  await s.appendMessage(assistant("a"));
  const other = await log.open(s.getSessionId());
  await other.appendMessage(user("sneaked in"));
  const before = s.getEntries().length;
  const err = await s.appendMessage(user("mine")).catch((e) => e);
  assert.ok(err instanceof ConflictError, String(err));
  assert.equal(err.code, "conflict");
  assert.equal(err.status, 409);
  assert.equal(err.field, "expectLastSeq");
  assert.equal(err.lastSeq, other.lastSeq);
  assert.equal(s.getEntries().length, before, "the view is unchanged");
  // Read what was missed, then the append goes through.
  await s.sync({ minSeq: err.lastSeq });
  const id = await s.appendMessage(user("mine"));
  assert.ok(s.getEntry(id));
});

test("idempotent retry: the first reply is lost, the client resends, the entry is stored once", async () => {
  const s0 = await stored("/t/retry");
  let appends = 0;
  const proxy = await startProxy(node.url, (req) => {
    if (req.method === "POST" && req.url.endsWith("/entries") && ++appends === 1) return { drop: true };
    return {};
  });
  try {
    const viaProxy = new SessionLog({ baseUrl: proxy.url, token: node.token, retry: { backoffMs: 10 } });
    const s = await viaProxy.open(s0.getSessionId(), { clientId: "w1" });
    const id = await s.appendMessage(user("sent twice, stored once"));
    assert.equal(appends, 2, "the append was sent again");
    const appendBodies = proxy.requests.filter((r) => r.method === "POST");
    assert.equal(appendBodies.length, 2);
    const all = await log.allEntries(s.getSessionId(), { minSeq: s.lastSeq });
    assert.equal(all.entries.filter((e) => e.entry.id === id).length, 1);
    assert.equal(all.entries.length, 3);
    assert.equal(s.getSeq(id), all.entries[2].seq);
  } finally {
    await proxy.close();
  }
});

test("idempotent retry of the create: its first reply lost, the session is stored once", async () => {
  let creates = 0;
  const proxy = await startProxy(node.url, (req) => (req.method === "POST" && req.url === "/v1/sessions" && ++creates === 1 ? { drop: true } : {}));
  try {
    const viaProxy = new SessionLog({ baseUrl: proxy.url, token: node.token, retry: { backoffMs: 10 } });
    const s = viaProxy.create({ cwd: "/t/create-retry", clientId: "w1" });
    await s.appendMessage(user("q"));
    await s.appendMessage(assistant("a"));
    assert.equal(creates, 2);
    assert.ok(s.isFlushed() && s.lastSeq > 0);
    const list = await log.list({ cwd: "/t/create-retry" });
    assert.equal(list.sessions.length, 1);
    assert.equal(list.sessions[0].entryCount, 2);
  } finally {
    await proxy.close();
  }
});

test("a crash before the first reply leaves nothing on the server", async () => {
  const s = log.create({ cwd: "/t/crashed", clientId: "w1" });
  await s.appendModelChange("anthropic", "claude-sonnet-4");
  await s.appendMessage(user("a question nobody answered"));
  await s.appendMessage(user("and another"));
  assert.equal(s.isFlushed(), false);
  // The worker dies here: the Session is dropped.
  assert.deepEqual((await log.list({ cwd: "/t/crashed", consistency: "strong" })).sessions, []);
  await assert.rejects(log.open(s.getSessionId()), NotFoundError);
});

test("watch resumes after a cut with Last-Event-ID: every entry once, in order", async () => {
  const s = await stored("/t/watch");
  for (let i = 0; i < 8; i++) await s.appendMessage(user(`m${i}`));
  const want = (await log.allEntries(s.getSessionId(), { minSeq: s.lastSeq })).entries;
  assert.equal(want.length, 10);
  // Cut the first stream in the middle of the 4th event.
  let watches = 0;
  let cutAt;
  const proxy = await startProxy(node.url, (req) => {
    if (!req.url.includes("/watch")) return {};
    if (++watches > 1) return {};
    // ": watching\n\n" and three whole events, then half of the fourth.
    let bytes = ": watching\n\n".length;
    for (let i = 0; i < 3; i++) bytes += `id: ${want[i].seq}\nevent: entry\ndata: ${JSON.stringify(want[i].entry)}\n\n`.length;
    cutAt = bytes + 20;
    return { cutAfterBytes: cutAt };
  });
  try {
    const viaProxy = new SessionLog({ baseUrl: proxy.url, token: node.token, retry: { backoffMs: 10 } });
    const ac = new AbortController();
    const seen = [];
    const done = (async () => {
      for await (const x of viaProxy.watch(s.getSessionId(), { signal: ac.signal })) {
        seen.push(x);
        if (seen.length === 12) ac.abort();
      }
    })();
    await waitFor(() => seen.length >= 10, { what: "the backlog" });
    const late = [await s.appendMessage(user("late 1")), await s.appendMessage(user("late 2"))];
    await done;
    assert.ok(watches >= 2, "reconnected");
    const resumed = proxy.requests.filter((r) => r.url.includes("/watch"))[1];
    assert.equal(resumed.headers["last-event-id"], String(want[2].seq));
    assert.deepEqual(seen.slice(0, 10).map((x) => x.seq), want.map((x) => x.seq));
    assert.deepEqual(seen.slice(0, 10).map((x) => x.entry), want.map((x) => x.entry));
    assert.deepEqual(seen.slice(10).map((x) => x.entry.id), late);
    const seqs = seen.map((x) => x.seq);
    assert.deepEqual([...seqs].sort((a, b) => a - b), seqs);
    assert.equal(new Set(seqs).size, seqs.length);
  } finally {
    await proxy.close();
  }
});

test("watch with afterSeq starts after it; an unknown session is NotFoundError", async () => {
  const s = await stored("/t/watch2");
  const first = s.getSeq(s.getEntries()[0].id);
  const ac = new AbortController();
  const got = [];
  for await (const x of log.watch(s.getSessionId(), { afterSeq: first, signal: ac.signal })) {
    got.push(x);
    ac.abort();
  }
  assert.equal(got.length, 1);
  assert.equal(got[0].entry.id, s.getEntries()[1].id);
  const it = log.watch("01a22bdc-6ce8-7741-8406-3ad384bc1b00");
  await assert.rejects(it.next(), NotFoundError);
});

test("an entry id another writer took is drawn again, and the append goes through", async () => {
  const a = await stored("/t/ids");
  const other = await log.open(a.getSessionId());
  await other.appendMessage(user("placeholder")); // so that the raw append below has a parent
  await log.append(a.getSessionId(), [{ id: "aaaaaaaa", type: "message", parentId: a.getLeafId(), message: user("taken") }]);
  const real = globalThis.crypto.getRandomValues.bind(globalThis.crypto);
  let forced = 0;
  globalThis.crypto.getRandomValues = (b) => (forced++ === 0 ? b.fill(0xaa) : real(b));
  let id;
  try {
    id = await a.appendMessage(user("mine"));
  } finally {
    globalThis.crypto.getRandomValues = real;
  }
  assert.ok(forced >= 2, "a second id was drawn");
  assert.notEqual(id, "aaaaaaaa");
  assert.equal(a.getEntry("aaaaaaaa").message.content, "taken", "the other writer's entry is merged");
  assert.equal(a.getEntry(id).message.content, "mine");
  const all = await log.allEntries(a.getSessionId(), { minSeq: a.lastSeq });
  assert.equal(all.entries.filter((e) => e.entry.id === id).length, 1);
});

test("a cursor another writer moved: branch is a ConflictError with its revision; overwriteCursor takes it back", async () => {
  const s = await stored("/t/cursor");
  const [q] = s.getEntries().map((e) => e.id);
  const cur = await log.getCursor(s.getSessionId(), "w1");
  assert.equal(cur.leafId, s.getLeafId(), "create set the cursor");
  const moved = await log.setCursor(s.getSessionId(), "w1", null); // an operator, or a second process with the same id
  const err = await s.branch(q).catch((e) => e);
  assert.ok(err instanceof ConflictError, String(err));
  assert.equal(err.field, "expectRevision");
  assert.equal(err.revision, moved.revision);
  assert.equal(s.getLeafId(), q, "the leaf moved; the cursor did not");
  assert.equal((await log.getCursor(s.getSessionId(), "w1")).leafId, null);
  await s.overwriteCursor();
  assert.equal((await log.getCursor(s.getSessionId(), "w1")).leafId, q);
  await s.resetLeaf();
  assert.equal((await log.getCursor(s.getSessionId(), "w1")).leafId, null);
});

test("delete: a stale expectLastSeq is a ConflictError with lastSeq and erases nothing; the right one erases the session", async () => {
  const s = await stored("/t/delete");
  await s.appendMessage(user("a secret to forget"));
  const beside = await stored("/t/delete");
  const id = s.getSessionId();
  const err = await log.delete(id, { expectLastSeq: s.lastSeq - 1 }).catch((e) => e);
  assert.ok(err instanceof ConflictError, String(err));
  assert.equal(err.status, 409);
  assert.equal(err.lastSeq, s.lastSeq);
  assert.equal((await log.get(id)).entryCount, 3, "nothing erased");

  const r = await log.delete(id, { expectLastSeq: s.lastSeq });
  assert.deepEqual(r, { sessionId: id, records: 1 + 3, archivedCopies: 0, lastSeq: s.lastSeq }, "the header and every entry");
  await assert.rejects(log.get(id), NotFoundError);
  await assert.rejects(log.getCursor(id, "w1"), NotFoundError);
  await assert.rejects(log.delete(id), NotFoundError);
  assert.equal((await log.get(beside.getSessionId())).entryCount, 2, "the session beside it stays");
});
