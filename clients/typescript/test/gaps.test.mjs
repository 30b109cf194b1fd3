// The server features of issue 17's "server gaps": create with a client
// (the cursor set in the same request), POST /v1/context (pi's
// buildSessionContext before the first flush) and GET tree?include=entries
// (pi's getTree() shape).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SessionLog } from "../dist/index.js";
import { assistant, startNode, toolResult, user } from "./helpers.mjs";

let node, log;
before(async () => {
  node = await startNode();
  log = new SessionLog({ baseUrl: node.url, token: node.token });
});
after(async () => node && (await node.stop()));

test("create with a client sets its cursor in the same request", async () => {
  const s = log.create({ cwd: "/t/gaps" });
  await s.appendMessage(user("q"));
  await s.appendMessage(assistant("a"));
  const leaf = s.getLeafId();
  const r = await log.createSession(
    { type: "session", version: 3, id: "01a22bdc-6ce8-7741-8406-3ad384bc1b01", timestamp: new Date().toISOString(), cwd: "/t/gaps" },
    s.getEntries(),
    { client: "w1" },
  );
  assert.ok(r.cursor, "the reply has the cursor");
  assert.equal(r.cursor.client, "w1");
  assert.equal(r.cursor.leafId, leaf);
  assert.equal(r.cursor.seq, r.lastSeq);
  assert.ok(r.cursor.revision >= 1);
  const again = await log.append(r.sessionId, [{ id: "feed0001", type: "message", message: user("more") }], { client: "w1" });
  assert.equal(again.cursor?.leafId, "feed0001");
});

test("buildSessionContext before the first flush: POST /v1/context", async () => {
  const s = log.create({ cwd: "/t/gaps" });
  await s.appendModelChange("anthropic", "claude-sonnet-4");
  await s.appendThinkingLevelChange("high");
  const q = await s.appendMessage(user("why?"));
  const ctx = await s.buildSessionContext();
  assert.equal(s.isFlushed(), false);
  assert.equal(ctx.leafId, q);
  assert.equal(ctx.thinkingLevel, "high");
  assert.deepEqual(ctx.model, { provider: "anthropic", modelId: "claude-sonnet-4" });
  assert.deepEqual(ctx.messages.map((m) => m.content), ["why?"]);
  await s.resetLeaf();
  const empty = await s.buildSessionContext();
  assert.deepEqual(empty.messages, []);
  const llm = await log.buildContext(s.getEntries(), { format: "llm" });
  assert.equal(llm.messages.length, 1);
});

test("getTree: pi's shape from the server, as held here", async () => {
  const s = log.create({ cwd: "/t/gaps", clientId: "w1" });
  const q = await s.appendMessage(user("q"));
  const [a] = await s.appendMessages([assistant("reading", [["c1", "read", { path: "x" }]]), toolResult("c1", "read", "x")]);
  const rc = await s.appendMessage(assistant("root cause"));
  await s.branch(q);
  await s.appendMessage(user("q2"));
  await s.appendLabelChange(rc, "root_cause_found");
  const tree = await s.getTree();
  assert.deepEqual(tree, s.localTree());
  assert.equal(tree[0].entry.id, q);
  assert.equal(tree[0].children[0].entry.id, a);
  const node = tree[0].children[0].children[0].children[0];
  assert.equal(node.entry.id, rc);
  assert.equal(node.label, "root_cause_found");
  const raw = await log.tree(s.getSessionId(), { client: "w1" });
  assert.equal(raw.leafId, s.getLeafId());
  assert.deepEqual(raw.tree, tree, "the server's own tree, in pi's shape");
  assert.equal(raw.tree[0].entry.id, q);
});
