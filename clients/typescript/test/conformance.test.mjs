// pi's own vectors through the client: every session file of the public
// pi 1.1.0 set (../shared/conformance/pi-v3-1.1, written and computed by
// pi 1.1.0's SessionManager) imported into a real pi-node, then read back
// with the client — tree, leaf, labels, name, every context pi computed
// (agent and LLM form) and the export — and compared with pi's answers.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { SessionLog, replaySystemMessages } from "../dist/index.js";
import { startNode } from "./helpers.mjs";

// The vectors as the Go tests find them (internal/conformance.Dir):
// $PI_CONFORMANCE_DIR, else shared/ beside the clone, else the copy in
// testdata/conformance.
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const root =
  process.env.PI_CONFORMANCE_DIR ||
  [join(repo, "..", "shared", "conformance"), join(repo, "testdata", "conformance")].find((d) => existsSync(join(d, "pi-v3-1.1"))) ||
  join(repo, "testdata", "conformance");
const set = join(root, "pi-v3-1.1");

let node, log;
before(async () => {
  node = await startNode();
  log = new SessionLog({ baseUrl: node.url, token: node.token });
});
after(async () => node && (await node.stop()));

/** The cases of the set that hold a session file. */
function cases() {
  if (!existsSync(set)) throw new Error(`${set}: the conformance vectors are not there (shared/ beside the clone, or testdata/conformance)`);
  return readdirSync(set)
    .filter((c) => existsSync(join(set, c, "session.jsonl")))
    .sort();
}

/** What pi itself reads of a file: lines that are JSON, blank and malformed ones skipped (README, "Reading the session files"). */
function piLines(text) {
  return text.split("\n").filter((l) => {
    if (l.trim() === "") return false;
    try {
      JSON.parse(l);
      return true;
    } catch {
      return false;
    }
  });
}

const shape = (nodes) => nodes.map((n) => ({ id: n.entry.id, children: shape(n.children) }));

test("the public pi 1.1.0 vectors, through the client", async (t) => {
  const names = cases();
  assert.ok(names.length >= 13, `only ${names.length} cases in ${set}`);
  let contexts = 0;
  let checkpoints = 0;
  for (const c of names) {
    await t.test(c, async () => {
      const file = readFileSync(join(set, c, "session.jsonl"), "utf8");
      const want = JSON.parse(readFileSync(join(set, c, "expected.json"), "utf8"));
      const imp = await log.import(file);
      assert.equal(imp.sessionId, want.sessionId);

      const got = await log.get(want.sessionId);
      assert.ok(!("usageBreakdown" in got), "only asked for");
      assert.deepEqual((await log.get(want.sessionId, { include: "usage" })).usageBreakdown, want.usageBreakdown, "usageBreakdown");
      assert.equal(got.name, want.name, "name");
      assert.equal(got.cwd, want.cwd, "cwd");
      assert.equal(got.leafId, want.leafId, "leafId");
      assert.equal(got.entryCount, want.entryCount, "entryCount");
      assert.deepEqual(got.labels, want.labels, "labels");

      const tree = await log.tree(want.sessionId);
      assert.deepEqual(shape(tree.tree), want.tree, "tree");

      for (const x of want.contexts) {
        const agent = await log.context(want.sessionId, { leaf: x.leafId });
        const at = `context at ${x.leafId}`;
        assert.equal(agent.leafId, x.leafId, at);
        assert.deepEqual(agent.path, x.path, `${at}: path`);
        assert.deepEqual(agent.contextEntryIds, x.contextEntryIds, `${at}: contextEntryIds`);
        assert.equal(agent.thinkingLevel, x.thinkingLevel, `${at}: thinkingLevel`);
        assert.deepEqual(agent.model, x.model, `${at}: model`);
        assert.deepEqual(agent.messages, x.messages, `${at}: messages`);
        const llm = await log.context(want.sessionId, { leaf: x.leafId, format: "llm" });
        assert.deepEqual(llm.messages, x.llmMessages, `${at}: llmMessages`);
        contexts++;
      }

      // appendCompaction's checkpoint: the system messages of the context
      // at the compaction's parent, replayed, are what pi 1.1 stored.
      for (const line of piLines(file).map((l) => JSON.parse(l))) {
        if (line.type !== "compaction" || !line.systemMessage) continue;
        const at = await log.context(want.sessionId, { leaf: line.parentId });
        const { timestamp: _t, ...replayed } = replaySystemMessages(at.messages) ?? {};
        const { timestamp: _s, ...stored } = line.systemMessage;
        assert.deepEqual(replayed, stored, `compaction ${line.id}'s systemMessage`);
        checkpoints++;
      }

      // The export is pi's file less what pi skips when it reads one.
      const exported = await log.export(want.sessionId);
      assert.deepEqual(exported.split("\n").slice(0, -1), piLines(file), "export");

      // And a Session opened on it holds what pi's SessionManager holds.
      const s = await log.open(want.sessionId);
      assert.equal(s.getLeafId(), want.leafId);
      assert.equal(s.getSessionName(), want.name ?? undefined);
    });
  }
  assert.ok(contexts > 100, `only ${contexts} contexts compared`);
  assert.ok(checkpoints >= 20, `only ${checkpoints} compaction checkpoints compared`);
});
