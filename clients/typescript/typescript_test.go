package typescript

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestTypeScriptClient builds pi-node, compiles the TypeScript client and
// runs its node --test suite against real pi-nodes (run-tests.sh).
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the TypeScript suite runs real pi-nodes")
	}
	for _, tool := range []string{"tsc", "node", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed, so the TypeScript client is not tested (apt-get install node-typescript; Node >= 20)", tool)
		}
	}
	out, err := exec.Command("node", "-e", "process.exit(Number(process.versions.node.split('.')[0]) >= 20 ? 0 : 1)").CombinedOutput()
	if err != nil {
		t.Skipf("Node.js >= 20 is needed for the TypeScript client's tests: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "run-tests.sh")
	cmd.WaitDelay = 10 * time.Second
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run-tests.sh: %v\n%s", err, out)
	}
	t.Logf("run-tests.sh:\n%s", tail(out, 40))
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
