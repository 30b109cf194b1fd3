// The freshness of reads, against a real pi-node.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SessionLog } from "../dist/index.js";
import { assistant, startNode, user, waitFor } from "./helpers.mjs";

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
