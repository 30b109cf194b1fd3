package tree

import (
	"crypto/rand"
	"encoding/hex"
	"io"
)

// IDGen makes entry ids as pi's generateId does: 8 lowercase hex characters
// (pi takes the first 8 of a random UUID), drawn again when taken. The random
// source is an input so tests are deterministic; nil means crypto/rand.
type IDGen struct {
	R io.Reader
}

// New returns an id for which taken returns false. After 100 collisions in a
// row (a session would need billions of entries) it returns a full random
// UUID (version 4, 36 characters), as pi 1.1's generateId falls back to
// randomUUID().
func (g IDGen) New(taken func(id string) bool) string {
	var b [4]byte
	for range 100 {
		g.read(b[:])
		id := hex.EncodeToString(b[:])
		if taken == nil || !taken(id) {
			return id
		}
	}
	var u [16]byte
	g.read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (g IDGen) read(b []byte) {
	if g.R != nil {
		if _, err := io.ReadFull(g.R, b); err == nil {
			return
		}
	}
	_, _ = rand.Read(b) // never fails (crypto/rand since Go 1.24)
}

func newIDSource(r io.Reader) IDGen { return IDGen{R: r} }
