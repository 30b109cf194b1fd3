// The client in a real browser: headless Chromium loads a page from
// another origin than pi-node's, which imports dist/index.js as an ES
// module and runs pi's story through CORS (every request carries a token,
// so each goes through a preflight), then a watch over fetch streaming.
// Skipped, with a message, where no Chromium is installed.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { SessionLog } from "../dist/index.js";
import { startNode, waitFor } from "./helpers.mjs";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");

/** The Chromium binary: $CHROMIUM_BIN, else the first of the usual names on PATH. */
function chromium() {
  for (const name of [process.env.CHROMIUM_BIN, "chromium", "chromium-browser", "google-chrome"]) {
    if (name && spawnSync(name, ["--version"], { stdio: "ignore" }).status === 0) return name;
  }
  return null;
}

// The page: the story's first steps, the tree, the context, and a watch
// that must see an entry appended after it started. It reports to /result.
const page = (nodeUrl, token) => `<!doctype html>
<title>sessionlog in a browser</title>
<script type="module">
import { SessionLog, NotFoundError } from "/dist/index.js";
const report = (r) => fetch("/result", { method: "POST", body: JSON.stringify(r) });
try {
  const log = new SessionLog({ baseUrl: ${JSON.stringify(nodeUrl)}, token: ${JSON.stringify(token)} });
  const s = log.create({ cwd: "/browser", clientId: "tab-1" });
  await s.appendModelChange("anthropic", "claude-sonnet-4");
  const q = await s.appendMessage({ role: "user", content: "Why does the salt check fail?", timestamp: Date.now() });
  const before = await s.buildSessionContext({ format: "llm" });
  await s.appendMessage({ role: "assistant", content: [{ type: "text", text: "SALT is read before dotenv loads." }],
    provider: "anthropic", model: "claude-sonnet-4", api: "anthropic-messages", stopReason: "stop", timestamp: Date.now() });
  const tree = await s.getTree();
  const after = await s.buildSessionContext();
  const ac = new AbortController();
  const seen = [];
  const watching = (async () => {
    for await (const ev of log.watch(s.getSessionId(), { signal: ac.signal })) {
      seen.push(ev.entry.id);
      if (seen.length === 4) ac.abort();
    }
  })();
  const late = await s.appendSessionInfo("from a browser");
  await watching;
  let missing = "";
  try { await log.get("01a22ba6-0000-7000-8000-00000000b0b0"); } catch (e) { missing = e instanceof NotFoundError ? e.code : String(e); }
  await report({ ok: true, sessionId: s.getSessionId(), q, late, flushed: s.isFlushed(), beforeMessages: before.messages.length,
    afterMessages: after.messages.length, roots: tree.length, seen, missing, agent: navigator.userAgent });
} catch (e) {
  await report({ ok: false, error: String(e && e.stack || e) });
}
</script>`;

const browser = chromium();
let node, server, origin, results;

before(async () => {
  if (!browser) return;
  // The page's server first: pi-node must know its origin.
  results = [];
  server = http.createServer((req, res) => {
    if (req.method === "POST" && req.url === "/result") {
      let b = "";
      req.on("data", (c) => (b += c));
      req.on("end", () => { results.push(JSON.parse(b)); res.end(); });
      return;
    }
    if (req.url.startsWith("/dist/") && /^\/dist\/[a-z]+\.js$/.test(req.url)) {
      res.setHeader("Content-Type", "text/javascript");
      res.end(readFileSync(join(dist, req.url.slice("/dist/".length))));
      return;
    }
    if (req.url === "/") {
      res.setHeader("Content-Type", "text/html");
      res.end(page(node.url, node.token));
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${server.address().port}`;
  node = await startNode({ args: ["--http-cors-origins", origin] });
});
after(async () => {
  server?.close();
  await node?.stop();
});

test("in headless Chromium, from another origin: the story, the tree, contexts, a watch", { skip: browser ? false : "no Chromium (apt-get install chromium, or set CHROMIUM_BIN)" }, async () => {
  const profile = mkdtempSync(join(tmpdir(), "pi-ts-chromium-"));
  const proc = spawn(browser, ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
    `--user-data-dir=${profile}`, `${origin}/`], { stdio: "ignore", detached: true });
  const exited = new Promise((r) => proc.on("exit", r));
  try {
    const r = await waitFor(() => results[0], { timeoutMs: 60000, what: "the page's result" });
    assert.equal(r.ok, true, r.error);
    assert.match(r.agent, /HeadlessChrome/);
    assert.equal(r.flushed, true);
    assert.equal(r.beforeMessages, 1, "POST /v1/context before the first reply");
    assert.equal(r.afterMessages, 2);
    assert.equal(r.roots, 1);
    assert.equal(r.missing, "not_found");
    assert.equal(r.seen.length, 4, "the watch saw the three stored entries and the one appended while it ran");
    assert.equal(r.seen[1], r.q);
    assert.equal(r.seen[3], r.late);
    // What the page stored is on the server, with the tab's cursor.
    const log = new SessionLog({ baseUrl: node.url, token: node.token });
    const cur = await log.getCursor(r.sessionId, "tab-1");
    assert.equal(cur.leafId, r.late);
  } finally {
    // Chromium's own processes are in its group: end them all.
    try { process.kill(-proc.pid, "SIGKILL"); } catch { /* gone already */ }
    await exited;
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});
