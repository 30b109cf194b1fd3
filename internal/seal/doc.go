// Package seal encrypts what sessionlog itself writes to disk: the Store's
// snapshot and spill blocks, and backups. JetStream encrypts its own files
// (its file store's cipher and key); this package derives that key from the
// same key file, so one secret covers every byte a node writes.
//
// A key file holds a secret of at least 32 bytes as text (pi-ctl
// gen-secrets writes 64 hex digits). Keys for each use are derived from it
// with HKDF-SHA256 and a label naming the use, so that no two schemes ever
// share a key. Sealing is AES-256-GCM with a random 96-bit nonce per
// message and the message's name as associated data (a block cannot be
// passed off as another session's). A Ring seals with its current key and
// opens with the current or a previous one: that is key rotation (docs/
// OPERATIONS.md, "Encryption at rest").
package seal
