// Package loopback picks free TCP ports on 127.0.0.1. It is shared by the
// tests (through testutil) and by pi-ctl bench, which starts a pi-node on
// free ports at run time; it does not import testing, so production code
// may use it.
package loopback

import "net"

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. The listeners are held until all n are picked, so the ports
// differ; another process may still take one before the caller binds it.
// Listeners that must be known before anything starts (cluster routes, a
// child process's flags) need this; a server of our own listens on port 0.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
