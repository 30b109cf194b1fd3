// The SSE parser, on its own.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SSEParser, entryId, uuidv7 } from "../dist/index.js";

function all(chunks) {
  const p = new SSEParser();
  return chunks.flatMap((c) => p.push(c));
}

test("comments, id, event, multi-line data", () => {
  const evs = all([": watching\n\n", "id: 4\nevent: entry\ndata: {\"a\":\ndata: 1}\n\n", ": ping\n\n"]);
  assert.deepEqual(evs, [{ event: "entry", data: '{"a":\n1}', id: "4" }]);
});

test("every line ending, split anywhere, and a BOM", () => {
  const text = "\uFEFFid: 1\r\nevent: entry\rdata: x\n\nid: 2\r\ndata:y\r\n\r\n";
  const want = [
    { event: "entry", data: "x", id: "1" },
    { event: "message", data: "y", id: "2" },
  ];
  for (let size = 1; size <= text.length; size++) {
    const chunks = [];
    for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
    assert.deepEqual(all(chunks), want, `chunks of ${size}`);
  }
});

test("an event cut before its blank line is not dispatched; the id persists", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push("id: 7\ndata: whole\n\nid: 8\ndata: half"), [{ event: "message", data: "whole", id: "7" }]);
  assert.equal(p.lastEventId, "8");
  assert.deepEqual(all(["id: 3\n\ndata: later\n\n"]), [{ event: "message", data: "later", id: "3" }]);
  assert.deepEqual(all(["data\n\n"]), [{ event: "message", data: "", id: "" }]);
  assert.deepEqual(all(["retry: 100\ndata: r\n\n"]), [{ event: "message", data: "r", id: "", retry: 100 }]);
});

test("ids: 8 hex entry ids unique in the session, UUIDv7 session ids", () => {
  const taken = new Set();
  for (let i = 0; i < 1000; i++) {
    const id = entryId(taken);
    assert.match(id, /^[0-9a-f]{8}$/);
    assert.ok(!taken.has(id));
    taken.add(id);
  }
  const u = uuidv7();
  assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.ok(uuidv7(Date.now() + 1000) > u, "time-ordered");
});

test("the package uses web-standard APIs only: no node: imports, Buffer, process or require", async () => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const dir = new URL("../dist/", import.meta.url);
  const files = readdirSync(dir).filter((f) => f.endsWith(".js"));
  assert.ok(files.length >= 5);
  for (const f of files) {
    const src = readFileSync(new URL(f, dir), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    assert.doesNotMatch(src, /from\s+["']node:|import\(["']node:|\bBuffer\b|\bprocess\.|\brequire\(/, f);
  }
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  assert.deepEqual(pkg.dependencies ?? {}, {});
  assert.equal(pkg.exports["."].types, "./dist/index.d.ts");
});
