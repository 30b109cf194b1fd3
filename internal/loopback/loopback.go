package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. The listeners are held until all n are picked, so the ports
// differ. A port is handed out once per process, and only if no other
// process that uses this package has claimed it (a lock file each, held
// until the process exits): tests run side by side, and a node killed
// and started again on its ports must find them still free, not handed to
// the next test. A program that does not use this package may still take
// one before the caller binds it.
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
	lo, hi := portRange()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 100*n {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		}
		if tries > 1000*n {
			return nil, fmt.Errorf("no free port on 127.0.0.1 that no other process claimed after %d tries", tries)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: draw again
			}
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if !claim(port) {
			ln.Close()
			continue // handed out already, here or by another process
		}
		lns = append(lns, ln)
		ports = append(ports, port)
	}
	return ports, nil
}

// portRange is where FreePorts draws; a test narrows it.
var portRange = quietRange

var (
	claimMu sync.Mutex
	claimed = map[int]bool{} // handed out by this process: never again
	held    []*os.File       // the lock files of those ports, open until exit
)

// claim reports whether port may be handed out: this process has not
// handed it out before, and no other live process holds its lock file in
// the shared directory. Without the directory (an unwritable temporary
// directory) only the first holds.
func claim(port int) bool {
	claimMu.Lock()
	defer claimMu.Unlock()
	if claimed[port] {
		return false
	}
	dir := filepath.Join(os.TempDir(), "sessionlog-ports")
	if err := os.MkdirAll(dir, 0o777); err == nil {
		_ = os.Chmod(dir, 0o1777) // shared by every user's tests, like /tmp
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err == nil {
		if !lockFile(f) {
			f.Close()
			return false
		}
		held = append(held, f)
	}
	claimed[port] = true
	return true
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
