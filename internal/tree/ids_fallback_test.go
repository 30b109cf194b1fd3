package tree

import (
	"bytes"
	"regexp"
	"testing"
)

// TestIDFallbackUUID: after 100 taken draws IDGen gives a full version-4
// UUID, as pi 1.1's generateId falls back to randomUUID().
func TestIDFallbackUUID(t *testing.T) {
	src := bytes.Repeat([]byte{0xca, 0xfe, 0xf0, 0x0d}, 100)
	src = append(src, bytes.Repeat([]byte{0xff}, 16)...)
	id := IDGen{R: bytes.NewReader(src)}.New(func(id string) bool { return id == "cafef00d" })
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) || id != "ffffffff-ffff-4fff-bfff-ffffffffffff" {
		t.Errorf("after 100 collisions: %q, want the version-4 UUID of the next 16 bytes", id)
	}
	if id := (IDGen{R: bytes.NewReader(src)}).New(func(string) bool { return false }); id != "cafef00d" {
		t.Errorf("a free first draw: %q", id)
	}
}
