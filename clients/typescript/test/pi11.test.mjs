// pi 1.1.0's additions, written through the client against a real pi-node:
// context edits, usage entries, system messages and the compaction's
// checkpoint of them, retain-none, forks re-chained over labels, and the
// flush at the first user message.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { InvalidError, NotFoundError, SessionLog, replaySystemMessages } from "../dist/index.js";
import { assistant, startNode, toolResult, user } from "./helpers.mjs";

let node, log, log11;
before(async () => {
  node = await startNode();
  log = new SessionLog({ baseUrl: node.url, token: node.token });
  log11 = new SessionLog({ baseUrl: node.url, token: node.token, pi11: true });
});
after(async () => node && (await node.stop()));

const usage = (input, output, total) => ({
  input,
  output,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: input + output,
  cost: { input: total / 2, output: total / 2, cacheRead: 0, cacheWrite: 0, total },
});

const system = (fields) => ({ role: "system", content: "", timestamp: Date.now(), ...fields });

test("appendContextEdit: refused as pi refuses, stored as pi stores, applied by the server's context", async () => {
  const s = log.create({ cwd: "/t/edits" });
  const q = await s.appendMessage(user("my password is hunter2"));
  const a = await s.appendMessage(assistant("noted", [["c1", "read", { path: "x" }]]));
  const r = await s.appendMessage(toolResult("c1", "read", "a very long file"));
  const model = await s.appendModelChange("anthropic", "claude-sonnet-4-5");

  await assert.rejects(s.appendContextEdit(q, { text: "no content" }), (e) => e instanceof InvalidError && e.field === "replacement");
  await assert.rejects(s.appendContextEdit(q, "bare string"), (e) => e instanceof InvalidError && e.field === "replacement");
  await assert.rejects(s.appendContextEdit("0badc0de", null), NotFoundError);
  await assert.rejects(s.appendContextEdit(model, null), (e) => e instanceof InvalidError && /does not contribute editable model content/.test(e.message));

  const omit = await s.appendContextEdit(q, null);
  const edit = await s.appendContextEdit(r, { content: "[elided]" });
  assert.deepEqual(s.getEntry(edit).replacement, { content: [{ type: "text", text: "[elided]" }] }, "a string becomes one text block for a toolResult");
  assert.equal(s.getEntry(omit).replacement, null);
  assert.equal(s.getEntry(q).message.content, "my password is hunter2", "the target never changes");

  const ctx = await s.buildSessionContext();
  assert.deepEqual(ctx.messages.map((m) => m.role), ["assistant", "toolResult"], "the omitted user message is gone");
  assert.deepEqual(ctx.messages[1].content, [{ type: "text", text: "[elided]" }]);

  // Off the active branch: refused; on another branch the edit does nothing.
  await s.branch(a);
  await assert.rejects(s.appendContextEdit(r, null), (e) => e instanceof InvalidError && /not on the active branch/.test(e.message));
  const other = await s.buildSessionContext();
  assert.deepEqual(other.messages.map((m) => m.role), ["user", "assistant"], "edits of the other branch do not apply here");
});

test("appendUsage: pi's entry, returned; never in the context", async () => {
  const s = log.create({ cwd: "/t/usage" });
  await s.appendMessage(user("q"));
  const u = await s.appendUsage("cache_warm", "openai-codex", "gpt-5.2-codex", usage(0, 0, 0.04));
  const noted = await s.appendUsage("future-kind/v2", "anthropic", "claude-sonnet-4-5", usage(10, 5, 0.2), "注: 预热");
  const empty = await s.appendUsage("side", "anthropic", "claude-sonnet-4-5", usage(1, 1, 0), "");
  assert.equal(u.type, "usage");
  assert.equal(u.kind, "cache_warm");
  assert.equal(noted.note, "注: 预热");
  assert.ok(!("note" in empty), "pi omits an empty note");
  await s.appendMessage(assistant("a"));
  assert.equal(s.isFlushed(), true);
  const ctx = await s.buildSessionContext();
  assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "assistant"]);
  const stored = (await log.allEntries(s.getSessionId())).entries.map((x) => x.entry);
  assert.deepEqual(stored.find((e) => e.id === noted.id), noted, "stored as written");
});

test("system messages, the compaction's checkpoint of them, and retain-none", async () => {
  const s = log.create({ cwd: "/t/system" });
  const read = { name: "read", description: "Read a file", parameters: { type: "object" } };
  const bash = { name: "bash", description: "Run a command", parameters: { type: "object" } };
  await s.appendMessage(system({ sections: { preamble: "You are pi.", date: "<date>" }, toolsAdded: [read, bash] }));
  const q = await s.appendMessage(user("q"));
  await s.appendMessage(assistant("a"));
  await s.appendMessage(system({ content: "Be brief.", sections: { date: null }, toolsRemoved: [{ name: "bash" }] }));

  const before = await s.buildSessionContext();
  const expected = replaySystemMessages(before.messages);
  assert.deepEqual(expected.sections, { preamble: "You are pi." });
  assert.deepEqual(expected.toolsAdded.map((t) => t.name), ["read"]);
  assert.equal(expected.content, "Be brief.");

  const keep = await s.appendCompaction("summary", q, 1000, { readFiles: [] }, false, usage(100, 10, 0.01));
  const c = s.getEntry(keep);
  assert.equal(c.firstKeptEntryId, q);
  assert.deepEqual(c.usage, usage(100, 10, 0.01));
  assert.deepEqual(c.systemMessage, { ...expected, timestamp: Date.parse(c.timestamp) }, "the prompt and tools at the compaction");
  assert.deepEqual(Object.keys(c), ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook", "systemMessage"], "pi 1.1's key order");

  // The context after it: the checkpoint, then the summary; the kept
  // range without its system messages.
  const ctx = await s.buildSessionContext();
  assert.deepEqual(ctx.messages.map((m) => m.role), ["system", "compactionSummary", "user", "assistant"]);

  const none = await s.appendCompaction("all of it", null, 2000);
  assert.equal(s.getEntry(none).firstKeptEntryId, none, "retain-none: its own id");
  const after1 = await s.buildSessionContext();
  assert.deepEqual(after1.messages.map((m) => m.role), ["system", "compactionSummary"], "nothing kept before it");

  // No system message anywhere: no checkpoint, and no read to find out.
  const plain = log.create({ cwd: "/t/system" });
  await plain.appendMessage(user("q"));
  await plain.appendMessage(assistant("a"));
  const pc = await plain.appendCompaction("s", null, 1);
  assert.ok(!("systemMessage" in plain.getEntry(pc)));
});

test("pi11: createBranchedSession of a pending session: labels left out, parents re-chained, the compaction's pointer moved", async () => {
  const s = log11.create({ cwd: "/t/fork11" });
  const m = await s.appendModelChange("anthropic", "claude-sonnet-4-5");
  const label = await s.appendLabelChange(m, "start");
  const c1 = await s.appendCustomEntry("ext", { n: 1 });
  const comp = await s.appendCompaction("s", label, 10);
  const tail = await s.appendCustomEntry("ext", { n: 2 });
  assert.equal(s.isFlushed(), false);

  const f = await s.createBranchedSession(tail);
  const fe = f.getEntries();
  assert.deepEqual(fe.map((e) => e.type), ["model_change", "custom", "compaction", "custom", "label"]);
  assert.deepEqual(fe.slice(0, 4).map((e) => [e.id, e.parentId]), [[m, null], [c1, m], [comp, c1], [tail, comp]], "re-chained over the label");
  assert.equal(fe[2].firstKeptEntryId, c1, "the dropped label's next kept entry");
  assert.equal(s.getEntry(comp).firstKeptEntryId, label, "the source is unchanged");
  assert.equal(fe[4].targetId, m);
  assert.equal(fe[4].parentId, tail, "the label re-created at the end");
  assert.equal(f.getLabel(m), "start");

  // Without pi11, as pi 0.73.1: the label's child keeps its parent, an orphan.
  const old = log.create({ cwd: "/t/fork11" });
  const m0 = await old.appendModelChange("anthropic", "claude-sonnet-4-5");
  const l0 = await old.appendLabelChange(m0, "start");
  const c0 = await old.appendCustomEntry("ext", { n: 1 });
  const g = await old.createBranchedSession(c0);
  assert.deepEqual(g.getEntries().slice(0, 2).map((e) => [e.id, e.parentId]), [[m0, null], [c0, l0]]);
});

test("pi11 stores at the first user message, as pi 1.1 writes its file; the default waits for the assistant", async () => {
  const cwd = "/t/flush-at";
  const byUser = log11.create({ cwd });
  await byUser.appendUsage("cache_warm", "p", "m", usage(0, 0, 0));
  await byUser.appendMessage(system({ content: "You are pi." }));
  assert.equal(byUser.isFlushed(), false, "no user or assistant message yet");
  const q = await byUser.appendMessage(user("the prompt survives"));
  assert.equal(byUser.isFlushed(), true);
  const stored = (await log.allEntries(byUser.getSessionId())).entries.map((x) => x.entry.id);
  assert.equal(stored.length, 3);
  assert.equal(stored[2], q);

  const byDefault = log.create({ cwd });
  await byDefault.appendMessage(user("lost if the turn never completes"));
  assert.equal(byDefault.isFlushed(), false);
  await assert.rejects(log.get(byDefault.getSessionId()), NotFoundError);
  await byDefault.appendMessage(assistant("a"));
  assert.equal(byDefault.isFlushed(), true);
});

test("pi11: names fold runs of CR and LF, branch summaries name the leaf left, the cwd is resolved", async () => {
  const s = log11.create({ cwd: "/home/dev//api-server/" });
  assert.equal(s.getCwd(), "/home/dev/api-server");
  const n = await s.appendSessionInfo("  two\r\n\r\nlines\nhere  ");
  assert.equal(s.getEntry(n).name, "two lines here");
  const q = await s.appendMessage(user("q"));
  const a = await s.appendMessage(assistant("a"));
  const bs = await s.branchWithSummary(q, "back to the question");
  assert.equal(s.getEntry(bs).fromId, a, "the leaf left behind");

  // The default writes as pi 0.73.1.
  const old = log.create({ cwd: "/home/dev//api-server/" });
  assert.equal(old.getCwd(), "/home/dev//api-server/");
  const n0 = await old.appendSessionInfo(" two\nlines ");
  assert.equal(old.getEntry(n0).name, "two\nlines");
});

test("createBranchedSession of a stored session: forked on the server as pi 1.1 with pi11 (re-chained), as pi 0.73.1 without", async () => {
  for (const [l, rechained] of [[log11, true], [log, false]]) {
    const s = l.create({ cwd: "/t/fork-stored" });
    const q = await s.appendMessage(user("q"));
    const label = await s.appendLabelChange(q, "start");
    const a = await s.appendMessage(assistant("a"));
    assert.equal(s.isFlushed(), true);
    const f = await s.createBranchedSession(a);
    const [e0, e1, e2] = f.getEntries();
    assert.deepEqual([e0.id, e1.id, e2.type], [q, a, "label"]);
    assert.equal(e1.parentId, rechained ? q : label, rechained ? "re-chained over the label" : "the label's child keeps its parent, an orphan");
  }
});
