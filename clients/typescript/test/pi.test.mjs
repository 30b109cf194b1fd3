// pi's SessionManager entry points beside create and open (continueRecent,
// inMemory, forkFrom) and the freshness of reads, against a real pi-node.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { NotFoundError, SessionLog } from "../dist/index.js";
import { assistant, startNode, toolResult, user, waitFor } from "./helpers.mjs";

let node, log;
before(async () => {
  node = await startNode();
  log = new SessionLog({ baseUrl: node.url, token: node.token });
});
after(async () => node && (await node.stop()));

/** A stored session in cwd: a question and its answer. */
async function stored(cwd, text = "q") {
  const s = log.create({ cwd });
  await s.appendMessage(user(text));
  await s.appendMessage(assistant(`re: ${text}`));
  return s;
}

test("reads carry their freshness: Pi-Applied-Seq, Pi-Lag, Pi-Node", async () => {
  const s = await stored("/t/fresh");
  const id = s.getSessionId();
  const reads = {
    get: await log.get(id),
    list: await log.list({ cwd: "/t/fresh" }),
    entries: await log.entries(id),
    allEntries: await log.allEntries(id),
    tree: await log.tree(id),
    context: await log.context(id),
  };
  for (const [name, r] of Object.entries(reads)) {
    const f = r.freshness;
    assert.ok(f, `${name}: no freshness`);
    assert.ok(Number.isSafeInteger(f.appliedSeq) && f.appliedSeq >= s.lastSeq, `${name}: appliedSeq ${f.appliedSeq} < lastSeq ${s.lastSeq}`);
    assert.ok(f.lag === "unknown" || (Number.isSafeInteger(f.lag) && f.lag >= 0), `${name}: lag ${f.lag}`);
    assert.equal(typeof f.stale, "boolean", name);
    assert.ok(typeof f.node === "string" && f.node !== "", `${name}: node ${f.node}`);
    assert.equal(f.servedBy, undefined, `${name}: a node holding every shard answers itself`);
    assert.ok(!("freshness" in JSON.parse(JSON.stringify(r))), `${name}: the body serializes as sent`);
  }
  // Lag is a number once the node has polled the log's end: "unknown" only before.
  await waitFor(async () => (await log.get(id)).freshness.lag === 0, { what: "Pi-Lag: 0" });
});

test("continueRecent opens the cwd's session modified last, or creates one", async () => {
  const cwd = "/t/continue";
  const fresh = await log.continueRecent(cwd, { clientId: "w1" });
  assert.equal(fresh.isFlushed(), false, "no session in the cwd: a new, pending one");
  assert.equal(fresh.getCwd(), cwd);
  assert.equal(fresh.getClientId(), "w1");

  const older = await stored(cwd, "first");
  const newer = await stored(cwd, "second");
  await stored("/t/continue/elsewhere", "not this cwd");
  let s = await log.continueRecent(cwd);
  assert.equal(s.getSessionId(), newer.getSessionId());
  assert.equal(s.getLeafId(), newer.getLeafId());

  await older.appendMessage(user("back to the first"));
  s = await log.continueRecent(cwd, { clientId: "w2" });
  assert.equal(s.getSessionId(), older.getSessionId(), "the one appended to last");
  assert.equal(s.getLeafId(), older.getLeafId());
  assert.equal(s.getClientId(), "w2");
});

test("inMemory never stores the session", async () => {
  const cwd = "/t/in-memory";
  const s = log.inMemory({ cwd });
  assert.equal(s.isPersisted(), false);
  const q = await s.appendMessage(user("q"));
  const [a] = await s.appendMessages([assistant("reading", [["c1", "read", { path: "x" }]]), toolResult("c1", "read", "x")]);
  await s.appendMessage(assistant("done"));
  await s.appendLabelChange(a, "read");
  assert.equal(s.isFlushed(), false);
  assert.equal(s.lastSeq, 0);
  assert.equal((await log.list({ cwd })).sessions.length, 0);
  await assert.rejects(log.get(s.getSessionId()), NotFoundError);

  const ctx = await s.buildSessionContext();
  assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
  const tree = await s.getTree();
  assert.equal(tree[0].entry.id, q);
  assert.equal(tree[0].children[0].label, "read");

  const b = await s.createBranchedSession(a);
  assert.equal(b.isPersisted(), false);
  assert.deepEqual(b.getBranch().filter((e) => e.type !== "label").map((e) => e.id), [q, a]);
  await b.appendMessage(assistant("still in memory"));
  assert.equal(b.isFlushed(), false);
  assert.equal((await log.list({ cwd })).sessions.length, 0);
});

test("forkFrom copies the whole tree into a new session in another cwd", async () => {
  const src = log.create({ cwd: "/t/fork-src", clientId: "w1" });
  const q = await src.appendMessage(user("q"));
  const a1 = await src.appendMessage(assistant("one way"));
  await src.branch(q);
  const a2 = await src.appendMessage(assistant("another way"));
  await src.appendLabelChange(a1, "first try");
  const srcEntries = src.getEntries();

  const f = await log.forkFrom(src.getSessionId(), "/t/fork-dst", { clientId: "w2" });
  assert.notEqual(f.getSessionId(), src.getSessionId());
  assert.equal(f.isFlushed(), true, "stored at once, as pi writes the file");
  assert.equal(f.getCwd(), "/t/fork-dst");
  assert.equal(f.getHeader().parentSession, src.getSessionId());
  assert.deepEqual(f.getEntries(), srcEntries, "every entry, both branches, the same ids");
  assert.equal(f.getLabel(a1), "first try");
  assert.equal(f.getLeafId(), srcEntries[srcEntries.length - 1].id, "at the last entry");
  assert.equal((await log.getCursor(f.getSessionId(), "w2")).leafId, f.getLeafId());

  // The fork goes its own way; the source is unchanged.
  await f.branch(a2);
  await f.appendMessage(user("only in the fork"));
  const again = await log.open(src.getSessionId());
  assert.deepEqual(again.getEntries(), srcEntries);
  assert.equal((await log.list({ cwd: "/t/fork-dst" })).sessions.length, 1);
  await assert.rejects(log.forkFrom("01a22bdc-6ce8-7741-8406-3ad384bc1b99", "/t/x"), NotFoundError);
});
