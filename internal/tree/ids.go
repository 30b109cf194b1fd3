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
// row (a session would need billions of entries) it returns 32 hex characters,
// as pi falls back to a full UUID.
func (g IDGen) New(taken func(id string) bool) string {
	var b [4]byte
	for range 100 {
		g.read(b[:])
		id := hex.EncodeToString(b[:])
		if taken == nil || !taken(id) {
			return id
		}
	}
	var long [16]byte
	g.read(long[:])
	return hex.EncodeToString(long[:])
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
