// Test helpers: a real pi-node in a temp dir, and a small HTTP proxy in
// front of it that can drop replies or cut streams.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Polls fn until it returns a truthy value, or fails after timeoutMs. */
export async function waitFor(fn, { timeoutMs = 20000, everyMs = 25, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sha256 = (s) => createHash("sha256").update(s).digest("hex");

/**
 * Starts pi-node (PI_NODE_BIN) on free ports with a temp --data-dir and an
 * admin --http-token; tokens: [{name, token, scopes}] go to an --http-tokens
 * file; args: more flags; tls: {cert, key} files serve HTTPS (readiness
 * is asked trusting cert, as a CA). Returns {url, token, stop, output}.
 */
export async function startNode({ tokens = [], args: extra = [], tls } = {}) {
  const bin = process.env.PI_NODE_BIN;
  if (!bin) throw new Error("PI_NODE_BIN is not set: build pi-node with go build -o /tmp/pi-node ./cmd/pi-node");
  const dir = mkdtempSync(join(tmpdir(), "pi-node-ts-"));
  const [httpPort, clientPort] = [await freePort(), await freePort()];
  const token = randomBytes(16).toString("hex");
  const args = [
    "--data-dir", join(dir, "data"),
    "--http-listen", `127.0.0.1:${httpPort}`,
    "--client-listen", `127.0.0.1:${clientPort}`,
    "--http-token", token,
    "--snapshot-interval", "0",
    "--log-level", "warn",
    ...extra,
  ];
  if (tls) args.push("--http-tls-cert", tls.cert, "--http-tls-key", tls.key);
  if (tokens.length > 0) {
    const file = join(dir, "tokens.jsonl");
    writeFileSync(file, tokens.map((t) => JSON.stringify({ name: t.name, sha256: sha256(t.token), scopes: t.scopes })).join("\n") + "\n");
    args.push("--http-tokens", file);
  }
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (b) => (output += b));
  proc.stderr.on("data", (b) => (output += b));
  let exited = false;
  const exit = new Promise((resolve) => proc.on("exit", (code, sig) => { exited = true; resolve({ code, sig }); }));
  const url = `${tls ? "https" : "http"}://127.0.0.1:${httpPort}`;
  const ca = tls ? readFileSync(tls.cert) : undefined;
  try {
    await waitFor(async () => {
      if (exited) throw new Error(`pi-node exited:\n${output}`);
      if (ca) return (await httpsStatus(`${url}/readyz`, ca)) === 200;
      const r = await fetch(`${url}/readyz`);
      return r.status === 200;
    }, { what: "pi-node /readyz" });
  } catch (err) {
    proc.kill("SIGKILL");
    throw new Error(`${err.message}\n${output}`);
  }
  return {
    url,
    token,
    output: () => output,
    async stop() {
      if (!exited) {
        proc.kill("SIGTERM");
        const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
        await exit;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The status of a GET over HTTPS that trusts ca (fetch takes no CA). */
function httpsStatus(url, ca) {
  return new Promise((resolve, reject) => {
    https.get(url, { ca }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on("error", reject);
  });
}

/**
 * An HTTP proxy to target. rules(req, n) for the n-th request (1-based)
 * may return {drop: true} (forward it, then cut the connection instead of
 * replying) or {cutAfterBytes: N} (stream the reply, then cut the
 * connection after N bytes of body). Every request is recorded in
 * `requests` (method, url, headers).
 */
export async function startProxy(target, rules = () => ({})) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const n = requests.push({ method: req.method, url: req.url, headers: { ...req.headers } });
    const rule = rules(req, n) ?? {};
    const up = http.request(new URL(req.url, target), { method: req.method, headers: req.headers }, (ur) => {
      if (rule.drop) {
        ur.resume();
        ur.on("end", () => req.socket.destroy());
        return;
      }
      res.writeHead(ur.statusCode, ur.headers);
      if (rule.cutAfterBytes === undefined) {
        ur.pipe(res);
        return;
      }
      let sent = 0;
      ur.on("data", (chunk) => {
        if (sent >= rule.cutAfterBytes) return;
        const room = rule.cutAfterBytes - sent;
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        sent += part.length;
        res.write(part);
        if (sent >= rule.cutAfterBytes) {
          ur.destroy();
          setTimeout(() => req.socket.destroy(), 20);
        }
      });
      ur.on("end", () => res.end());
    });
    up.on("error", () => req.socket.destroy());
    req.pipe(up);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

/** Messages as pi's agent builds them. */
export const now = () => Date.now();
export const user = (text) => ({ role: "user", content: text, timestamp: now() });
export const assistant = (text, toolCalls = []) => ({
  role: "assistant",
  content: [{ type: "text", text }, ...toolCalls.map(([id, name, args]) => ({ type: "toolCall", id, name, arguments: args }))],
  provider: "anthropic",
  model: "claude-sonnet-4",
  api: "anthropic-messages",
  stopReason: toolCalls.length ? "toolUse" : "stop",
  usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  timestamp: now(),
});
export const toolResult = (id, name, text) => ({
  role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text }], isError: false, timestamp: now(),
});
