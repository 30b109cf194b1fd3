//go:build linux

package cluster

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestNodeFailsFastOnBusyPort: a pi-node whose embedded server cannot bind
// its client or route port must exit with an error, as it does for a busy
// HTTP port. An operator (or a StatefulSet restarting a pod whose old
// process still holds the port) should see a crash, not a process that
// waits forever for a server that will never accept connections.
func TestNodeFailsFastOnBusyPort(t *testing.T) {
	skipShort(t)
	t.Parallel()
	for _, which := range []string{"client", "cluster"} {
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer busy.Close()
			busyAddr := busy.Addr().String()
			ports := testutil.FreePorts(t, 3)
			args := []string{"--node-name", "busy-" + which, "--data-dir", t.TempDir(),
				"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0])}
			if which == "client" {
				args = append(args, "--client-listen", busyAddr)
			} else {
				args = append(args, "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
					"--cluster-name", "busy", "--cluster-listen", busyAddr,
					"--routes", "nats-route://"+busyAddr+",nats-route://127.0.0.1:"+fmt.Sprint(ports[2]))
			}
			p := proctest.New(t, "busy-"+which, piNodeBin, args...)
			p.Start(t)
			const bound = 25 * time.Second
			_, err = testutil.Poll(bound, func() error {
				if p.Running() {
					return errors.New("still running")
				}
				return nil
			})
			if err != nil {
				t.Fatalf("pi-node with its %s port (%s) taken still runs after %v instead of exiting with an error; "+
					"its log says %q but start-up waits for the server forever", which, busyAddr, bound, "address already in use")
			}
			if p.ExitErr() == nil {
				t.Errorf("pi-node exited with status 0 although its %s port was taken", which)
			}
			if !p.LogContains("address already in use") {
				t.Errorf("the log does not name the cause:\n%s", p.Tail(20))
			}
		})
	}
}
