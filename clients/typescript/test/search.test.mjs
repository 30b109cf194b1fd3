// search and searchAll (GET /v1/search, issue 35) against a real pi-node.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ForbiddenError, InvalidError, SessionLog } from "../dist/index.js";
import { assistant, startNode, startProxy, toolResult, user } from "./helpers.mjs";

let node, log, ids, sessionId;
const cwd = "/home/dev/search-ts";

before(async () => {
  node = await startNode({ tokens: [{ name: "writer", token: "w-token", scopes: ["write"] }] });
  log = new SessionLog({ baseUrl: node.url, token: node.token });
  // A question, a read and its result, the root cause; then back to the
  // question for a second answer, which leaves the root cause off the
  // default path.
  const s = log.create({ cwd });
  const question = await s.appendMessage(user("Why does the salt check in auth.ts fail?"));
  const [read, readResult] = await s.appendMessages([
    assistant("Let me read auth.ts.", [["call_1", "read", { path: "src/auth.ts" }]]),
    toolResult("call_1", "read", "const salt = process.env.SALT;"),
  ]);
  const rootCause = await s.appendMessage(assistant("The salt is read before dotenv loads: the root cause."));
  await s.branch(question);
  const second = await s.appendMessage(assistant("Salt aside, the hash function is fine."));
  await s.appendSessionInfo("salt hunt");
  ids = { question, read, readResult, rootCause, second };
  sessionId = s.getSessionId();
  // Other hits for the pages.
  for (let i = 0; i < 4; i++) {
    const o = log.create({ cwd: "/home/dev/other" });
    await o.appendMessage(user(`pepper and salt number ${i}`));
    await o.appendMessage(assistant(`noted ${i}`));
  }
});
after(async () => node && (await node.stop()));

const joined = (hit) => hit.snippet.map((p) => p.text).join("");

test("search: the hits of a word, with their session, entry and snippet; read-your-writes through minSeq", async () => {
  // No wait: the client's minSeq is its own writes' last sequence.
  const page = await log.search(`salt session:${sessionId}`);
  const byId = new Map(page.hits.map((h) => [h.entryId, h]));
  for (const id of [ids.question, ids.readResult, ids.rootCause, ids.second]) assert.ok(byId.has(id), `hit ${id} in ${JSON.stringify(page.hits)}`);
  assert.equal(page.total, page.hits.length);
  assert.equal(page.next, undefined);
  assert.ok(page.freshness.appliedSeq > 0);

  const q = byId.get(ids.question);
  assert.equal(q.sessionId, sessionId);
  assert.equal(q.name, "salt hunt");
  assert.equal(q.cwd, cwd);
  assert.equal(q.type, "message");
  assert.equal(q.role, "user");
  assert.equal(typeof q.timestamp, "string");
  assert.equal(q.onPath, true);
  assert.equal(typeof q.score, "number");
  assert.match(joined(q), /salt check in auth/);
  const marked = q.snippet.filter((p) => p.match).map((p) => p.text.toLowerCase());
  assert.deepEqual([...new Set(marked)], ["salt"]);

  // The root cause is on the branch left behind.
  assert.equal(byId.get(ids.rootCause).onPath, false);
  assert.equal(byId.get(ids.second).onPath, true);
  assert.equal(byId.get(ids.readResult).role, "toolResult");
});

test("search: branch path leaves out the entries off the default path; filters and exclusions", async () => {
  const path = await log.search(`salt session:${sessionId}`, { branch: "path" });
  const onPath = path.hits.map((h) => h.entryId);
  assert.ok(!onPath.includes(ids.rootCause));
  assert.ok(onPath.includes(ids.second));
  assert.ok(path.hits.every((h) => h.onPath));

  const asst = await log.search(`salt role:assistant session:${sessionId}`);
  assert.deepEqual(asst.hits.map((h) => h.entryId).sort(), [ids.rootCause, ids.second].sort());
  const phrase = await log.search(`"root cause" -hash`);
  assert.deepEqual(phrase.hits.map((h) => h.entryId), [ids.rootCause]);
  const prefix = await log.search(`pepp* cwd:/home/dev/other`);
  assert.equal(prefix.hits.length, 4);
  assert.ok(prefix.hits.every((h) => h.name === undefined), "name is absent when the session has none");
});

test("searchAll: every hit once, page after page, as one big page has them", async () => {
  // The story's four messages and its name (session_info), the others' four.
  const whole = await log.search("salt", { limit: 100 });
  assert.equal(whole.hits.length, 9, JSON.stringify(whole.hits));
  const paged = [];
  for await (const h of log.searchAll("salt", { limit: 3 })) paged.push(h.sessionId + "/" + h.entryId);
  assert.equal(new Set(paged).size, paged.length, `no hit twice: ${paged}`);
  assert.deepEqual([...paged].sort(), whole.hits.map((h) => h.sessionId + "/" + h.entryId).sort());

  const first = await log.search("salt", { limit: 3 });
  assert.equal(first.hits.length, 3);
  assert.equal(typeof first.next, "string");
  const second = await log.search("salt", { limit: 3, cursor: first.next });
  assert.deepEqual(second.hits.map((h) => h.entryId), whole.hits.slice(3, 6).map((h) => h.entryId));
});

test("search: a bad query is an InvalidError about q naming the position; scope read", async () => {
  await assert.rejects(log.search(`salt "unclosed`), (err) => {
    assert.ok(err instanceof InvalidError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.field, "q");
    assert.match(err.message, /^q: position 6: /, "the 1-based position of the quote left open");
    return true;
  });
  await assert.rejects(log.search("salt", { branch: "sideways" }), (err) => err instanceof InvalidError && err.field === "branch");
  const writer = new SessionLog({ baseUrl: node.url, token: "w-token" });
  await assert.rejects(writer.search("salt"), ForbiddenError);
});

test("search: the query and options go as GET /v1/search's parameters, minSeq the highest sequence written", async () => {
  const proxy = await startProxy(node.url);
  try {
    const via = new SessionLog({ baseUrl: proxy.url, token: node.token });
    via.observe(sessionId, 3);
    const q = 'salt "root cause" -hash role:assistant name:"salt hunt"';
    await via.search(q, { branch: "path", limit: 2, consistency: "strong" });
    const first = new URL(proxy.requests[0].url, proxy.url);
    assert.equal(first.pathname, "/v1/search");
    assert.deepEqual(Object.fromEntries(first.searchParams), { q, branch: "path", limit: "2", minSeq: "3", consistency: "strong" });
    const page = await via.search("salt", { limit: 2 });
    await via.search("salt", { limit: 2, cursor: page.next });
    assert.equal(new URL(proxy.requests[2].url, proxy.url).searchParams.get("cursor"), page.next);
  } finally {
    await proxy.close();
  }
});
