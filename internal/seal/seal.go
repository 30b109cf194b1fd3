package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// MinSecret is the shortest secret a key file may hold, in bytes.
const MinSecret = 32

// Uses of the secret: each derives a key of its own.
const (
	UseStore     = "sessionlog store blocks v1"
	UseBackup    = "sessionlog backup v1"
	useJetStream = "sessionlog jetstream v1"
)

// ErrOpen means a sealed message did not open with any key of the ring:
// another key sealed it, or its bytes were changed.
var ErrOpen = errors.New("seal: message does not open with this key (another key, or changed bytes)")

// ParseSecret returns the secret a key file's text holds: the text without
// surrounding white space, at least MinSecret bytes of it.
func ParseSecret(text []byte) ([]byte, error) {
	s := bytes.TrimSpace(text)
	if len(s) < MinSecret {
		return nil, fmt.Errorf("the key is %d bytes, want at least %d (pi-ctl gen-secrets writes one: 64 hex digits)", len(s), MinSecret)
	}
	return s, nil
}

// ReadKeyFile reads and parses a key file; errors name the file.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	s, err := ParseSecret(b)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return s, nil
}

// derive is the 32-byte key of use from secret.
func derive(secret []byte, use string) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, use, 32)
	if err != nil {
		panic(err) // only for lengths HKDF cannot give; 32 it always can
	}
	return k
}

// JetStreamKey is the key nats-server's file store is given (its
// jetstream.key): derived, so it is not the secret itself.
func JetStreamKey(secret []byte) string {
	return hex.EncodeToString(derive(secret, useJetStream))
}

// Ring seals with its first key and opens with any of them.
type Ring struct {
	aeads []cipher.AEAD
}

// NewRing is the ring of use for the current secret and, during a key
// rotation, the previous ones.
func NewRing(use string, current []byte, previous ...[]byte) (*Ring, error) {
	r := &Ring{}
	for _, s := range append([][]byte{current}, previous...) {
		if len(s) < MinSecret {
			return nil, fmt.Errorf("seal: a secret of %d bytes, want at least %d", len(s), MinSecret)
		}
		block, err := aes.NewCipher(derive(s, use))
		if err != nil {
			return nil, err
		}
		a, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		r.aeads = append(r.aeads, a)
	}
	return r, nil
}

// Overhead is how many bytes sealing adds to a message.
func (r *Ring) Overhead() int {
	return r.aeads[0].NonceSize() + r.aeads[0].Overhead()
}

// Seal appends to dst the sealed form of plain (nonce, then ciphertext and
// tag), bound to name.
func (r *Ring) Seal(dst, plain, name []byte) []byte {
	a := r.aeads[0]
	n := len(dst)
	dst = append(dst, make([]byte, a.NonceSize())...)
	if _, err := rand.Read(dst[n:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return a.Seal(dst, dst[n:], plain, name)
}

// Open appends to dst the message sealed under name, opened with the first
// key of the ring that opens it; ErrOpen when none does.
func (r *Ring) Open(dst, sealed, name []byte) ([]byte, error) {
	for _, a := range r.aeads {
		if len(sealed) < a.NonceSize()+a.Overhead() {
			return nil, fmt.Errorf("%w: %d bytes", ErrOpen, len(sealed))
		}
		if out, err := a.Open(dst, sealed[:a.NonceSize()], sealed[a.NonceSize():], name); err == nil {
			return out, nil
		}
	}
	return nil, ErrOpen
}
