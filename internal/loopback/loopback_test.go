package loopback

import (
	"fmt"
	"net"
	"testing"
)

// TestFreePorts: distinct ports, outside the ephemeral range when there is
// room below it, each bindable once returned.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := quietRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d returned twice in %v", p, ports)
		}
		seen[p] = true
		if hi > lo && (p < lo || p >= hi) {
			t.Errorf("port %d is outside [%d, %d)", p, lo, hi)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}
