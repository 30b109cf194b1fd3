/** Random ids from crypto.getRandomValues (a web-standard API on every runtime). */

function randomBytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  globalThis.crypto.getRandomValues(b);
  return b;
}

function hex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** An entry id as pi draws them: 8 lower-case hex characters, not in `taken`. */
export function entryId(taken: { has(id: string): boolean }): string {
  for (let i = 0; i < 100; i++) {
    const id = hex(randomBytes(4));
    if (!taken.has(id)) return id;
  }
  return hex(randomBytes(16));
}

/** A UUIDv7 (time-ordered, lower case), as pi-node gives new sessions. */
export function uuidv7(now: number = Date.now()): string {
  const b = randomBytes(16);
  let t = now;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x70;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = hex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
