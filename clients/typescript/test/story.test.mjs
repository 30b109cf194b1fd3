// pi's eight-step debugging story (examples/agent in Go), against a real pi-node.
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

/** A fake model: a question gets a tool call first, then an answer. */
async function ask(s, text, tool) {
  const q = await s.appendMessage(user(text));
  const [id, name, args, result, answer] = tool;
  await s.appendMessages([assistant(`Let me ${name} first.`, [[id, name, args]]), toolResult(id, name, result)]);
  const a = await s.appendMessage(assistant(answer));
  return { q, a };
}

async function story(clientId) {
  const s = log.create({ cwd: "/home/dev/project", clientId });
  // 1. The model.
  const model = await s.appendModelChange("anthropic", "claude-sonnet-4");
  assert.equal(s.isFlushed(), false);
  // 2. The question: held in memory.
  const question = await s.appendMessage(user("Why does the salt check in auth.ts fail?"));
  assert.equal(s.isFlushed(), false, "nothing is stored before the first assistant message");
  assert.equal((await log.list({ cwd: "/home/dev/project" })).sessions.length, 0);
  // 3. A read and its result: the first assistant message stores the session.
  const [read, readResult] = await s.appendMessages([
    assistant("Let me read auth.ts.", [["call_1", "read", { path: "src/auth.ts" }]]),
    toolResult("call_1", "read", "const salt = process.env.SALT;"),
  ]);
  assert.equal(s.isFlushed(), true);
  assert.ok(s.lastSeq > 0);
  // 4. The root cause.
  const rootCause = await s.appendMessage(assistant("The root cause: SALT is read before dotenv loads."));
  // 5. Back to the question.
  await s.branch(question);
  assert.equal(s.getLeafId(), question);
  // 6. A second question, a grep, its result, an answer.
  const second = await ask(s, "Show me the hash function first.", ["call_2", "grep", { pattern: "hash" }, "src/hash.ts:3: export function hash", "Here it is."]);
  // 7. A label on the root cause, 8. a name.
  const label = await s.appendLabelChange(rootCause, "root_cause_found");
  const name = await s.appendSessionInfo("  auth salt debugging ");
  return { s, ids: { model, question, read, readResult, rootCause, second, label, name } };
}

test("the eight-step story: tree, branch, context, cursor, reopen", async () => {
  const { s, ids } = await story("agent-1");
  assert.match(ids.question, /^[0-9a-f]{8}$/);
  assert.equal(s.getSessionName(), "auth salt debugging");
  assert.equal(s.getLabel(ids.rootCause), "root_cause_found");
  assert.equal(s.getEntries().length, 11);

  // The branch: root to leaf.
  const branch = s.getBranch().map((e) => e.id);
  assert.deepEqual(branch.slice(0, 2), [ids.model, ids.question]);
  assert.equal(branch.length, 8);
  assert.equal(branch.at(-1), ids.name);
  assert.ok(!branch.includes(ids.rootCause));

  // The tree (held here): model → question → {read…root cause, second question…}.
  const tree = s.localTree();
  assert.equal(tree.length, 1);
  assert.equal(tree[0].entry.id, ids.model);
  const q = tree[0].children[0];
  assert.equal(q.entry.id, ids.question);
  assert.deepEqual(q.children.map((c) => c.entry.id), [ids.read, ids.second.q]);
  const rc = q.children[0].children[0].children[0];
  assert.equal(rc.entry.id, ids.rootCause);
  assert.equal(rc.label, "root_cause_found");

  // The same tree from the server (every writer's entries, pi's getTree() shape).
  assert.deepEqual(await s.getTree(), tree);

  // The context at the leaf, from the server.
  const ctx = await s.buildSessionContext();
  assert.equal(ctx.leafId, ids.name);
  assert.deepEqual(ctx.path, branch);
  assert.deepEqual(ctx.model, { provider: "anthropic", modelId: "claude-sonnet-4" });
  assert.equal(ctx.thinkingLevel, "off");
  assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "user", "assistant", "toolResult", "assistant"]);
  const llm = await s.buildSessionContext({ format: "llm" });
  assert.equal(llm.messages.length, 5);

  // The cursor is the leaf; another worker with the same client id resumes there.
  const cur = await log.getCursor(s.getSessionId(), "agent-1");
  assert.equal(cur.leafId, ids.name);
  const again = await log.open(s.getSessionId(), { clientId: "agent-1" });
  assert.equal(again.getLeafId(), ids.name);
  assert.equal(again.getSessionName(), "auth salt debugging");
  assert.deepEqual(again.getEntries(), s.getEntries());
  assert.equal(await log.export(s.getSessionId()), s.toJSONL(), "stored as pi would write it");

  // The server's view of the session.
  const got = await log.get(s.getSessionId(), { minSeq: s.lastSeq });
  assert.equal(got.name, "auth salt debugging");
  assert.deepEqual(got.labels, { [ids.rootCause]: "root_cause_found" });

  // Branch back moves the cursor (PUT); resetLeaf puts it before the first entry.
  await again.branch(ids.rootCause);
  assert.equal((await log.getCursor(s.getSessionId(), "agent-1")).leafId, ids.rootCause);
  const atRoot = await log.context(s.getSessionId(), { client: "agent-1" });
  assert.equal(atRoot.leafId, ids.rootCause);
  await again.resetLeaf();
  assert.equal((await log.getCursor(s.getSessionId(), "agent-1")).leafId, null);

  // list, paged and as an async iterator.
  const page = await log.list({ cwd: "/home/dev/project", limit: 1 });
  assert.equal(page.sessions[0].sessionId, s.getSessionId());
  const all = [];
  for await (const x of log.listAll({ limit: 1 })) all.push(x.sessionId);
  assert.ok(all.includes(s.getSessionId()));

  // createBranchedSession: the path to the root cause, its label re-created.
  const forked = await s.createBranchedSession(ids.rootCause);
  assert.notEqual(forked.getSessionId(), s.getSessionId());
  assert.equal(forked.getHeader().parentSession, s.getSessionId());
  const fe = forked.getEntries();
  assert.deepEqual(fe.slice(0, 5).map((e) => e.id), [ids.model, ids.question, ids.read, ids.readResult, ids.rootCause]);
  assert.equal(forked.getLabel(ids.rootCause), "root_cause_found");

  // import what export wrote, under a new id.
  const jsonl = (await log.export(s.getSessionId())).replace(s.getSessionId(), "01a22bdc-6ce8-7741-8406-3ad384bc1b94");
  const imp = await log.import(jsonl);
  assert.equal(imp.entryCount, 11);
});

test("branchWithSummary, compaction, custom entries and a pending fork", async () => {
  const s = log.create({ cwd: "/home/dev/other" });
  const q = await s.appendMessage(user("first"));
  await s.appendThinkingLevelChange("high");
  await s.appendCustomEntry("my-ext", { state: 1 });
  await s.appendCustomMessageEntry("my-ext", "injected", true, { x: 1 });
  const pendingFork = await s.createBranchedSession(q);
  assert.equal(pendingFork.isFlushed(), false);
  assert.deepEqual(pendingFork.getEntries().map((e) => e.id), [q]);
  const a = await s.appendMessage(assistant("answer"));
  const c = await s.appendCompaction("summary of it", q, 1234);
  const bs = await s.branchWithSummary(q, "tried the other way");
  assert.equal(s.getEntry(bs).parentId, q);
  assert.equal(s.getEntry(bs).fromId, q, "pi 0.73.1: the entry branched to");
  const ctx = await s.buildSessionContext();
  assert.equal(ctx.thinkingLevel, "off");
  assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "branchSummary"]);
  await s.branch(c);
  const ctx2 = await s.buildSessionContext();
  assert.equal(ctx2.thinkingLevel, "high");
  assert.equal(ctx2.messages[0].role, "compactionSummary");
  const root = await s.branchWithSummary(null, "from scratch");
  assert.equal(s.getEntry(root).parentId, null);
  assert.equal(s.getEntry(root).fromId, "root");
  assert.ok(a);
});
