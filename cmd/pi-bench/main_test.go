package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// piBench runs pi-bench in-process with an empty environment, so that
// $PI_CTL_SERVER on the developer's machine cannot point it elsewhere.
func piBench(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

// mustRun runs pi-bench and fails the test unless it exits 0 with nothing
// on stderr.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := piBench(args...)
	if code != 0 || stderr != "" {
		t.Fatalf("pi-bench %s: exit %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// The binaries the process scenarios run, built on first use in one go
// build (or taken from PI_NODE_BIN and PI_NATS_SERVER_BIN), removed by
// TestMain.
var built struct {
	once    sync.Once
	paths   map[string]string
	cleanup func()
	err     error
}

func builtBinary(t *testing.T, name string) string {
	t.Helper()
	built.once.Do(func() {
		built.paths, _, built.cleanup, built.err = proctest.Build("pi-bench-test-bin-", proctest.PiNode, proctest.NATSServer)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.paths[name]
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.cleanup != nil {
		built.cleanup()
	}
	os.Exit(code)
}
