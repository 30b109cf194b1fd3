// A private CA the runtime does not trust: the client says so at once and
// does not retry it as an outage (it used to, for its whole retry budget).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { CertificateError, SessionLog, isRetryable } from "../dist/index.js";
import { startNode } from "./helpers.mjs";

let node, dir, cert;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "pi-ts-tls-"));
  cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  // A self-signed certificate: its own CA, known to nobody.
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=pi-node", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "pipe" });
  node = await startNode({ tls: { cert, key } });
});
after(async () => {
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("an untrusted certificate: a CertificateError at once, not retried", async () => {
  let calls = 0;
  const log = new SessionLog({ baseUrl: node.url, token: node.token, fetch: (input, init) => (calls++, fetch(input, init)) });
  await assert.rejects(log.list(), (err) => {
    assert.ok(err instanceof CertificateError, `${err?.name}: ${err?.message}`);
    assert.equal(err.code, "certificate");
    assert.equal(isRetryable(err), false);
    assert.match(err.message, /not trusted .*NODE_EXTRA_CA_CERTS/);
    return true;
  });
  assert.equal(calls, 1, "the request was sent again");
});

test("the CA trusted through NODE_EXTRA_CA_CERTS: the same call works", () => {
  const client = fileURLToPath(new URL("../dist/index.js", import.meta.url));
  const script = `import { SessionLog } from ${JSON.stringify(client)};
    const page = await new SessionLog({ baseUrl: ${JSON.stringify(node.url)}, token: ${JSON.stringify(node.token)} }).list();
    console.log("sessions", page.sessions.length);`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script],
    { env: { ...process.env, NODE_EXTRA_CA_CERTS: cert }, encoding: "utf8" });
  assert.match(out, /^sessions 0$/m);
});
