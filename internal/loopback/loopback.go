package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. The listeners are held until all n are picked, so the ports
// differ; another process may still take one before the caller binds it.
// Listeners that must be known before anything starts (cluster routes, a
// child process's flags) need this; a server of our own listens on port 0.
//
// The ports come from below the kernel's ephemeral range where there is
// room: a port from that range (what port 0 gives) is also what the kernel
// hands every outgoing connection, so between the pick and the bind a
// busy machine — tests running side by side — takes it often.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	lo, hi := quietRange()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 100*n {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: draw again
			}
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// quietRange returns [lo, hi): ports below the ephemeral range and above
// the well-known and common service ports, or an empty range when the
// ephemeral range leaves no room below it.
func quietRange() (lo, hi int) {
	first := 32768 // Linux's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var end int
		if _, err := fmt.Sscan(string(b), &first, &end); err != nil {
			first = 32768
		}
	}
	lo, hi = 20000, first
	if hi-lo < 1000 {
		return 0, 0
	}
	return lo, hi
}
