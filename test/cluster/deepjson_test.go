//go:build linux

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestDeepJSONRealNode: the request that killed a node (hardening item 1),
// sent to the real binary. 2,000,000 '[' in an unknown field of a context
// request over HTTP, and 4,000,000 over NATS (pi.v1.context, what the
// reader role may call), each end in "fatal error: stack overflow" in the
// request decoder without the nesting bound: the process died. With it,
// each is a 400 naming the depth, and the same process serves on.
func TestDeepJSONRealNode(t *testing.T) {
	skipShort(t)
	t.Parallel()
	ports := testutil.FreePorts(t, 2)
	nd := &piNode{name: "solo", base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), natsURL: fmt.Sprintf("nats://127.0.0.1:%d", ports[1])}
	nd.Proc = proctest.New(t, "solo", piNodeBin, "--node-name", "solo", "--data-dir", t.TempDir(),
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]))
	nd.Start(t)
	testutil.WaitFor(t, readyTimeout, func() error { return proctest.Ready(nd.base) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sid := testutil.SessionID(t)
	if _, err := createSession(ctx, proctest.ProbeClient, []string{nd.base}, 0, sid, "/deep", time.Now()); err != nil {
		t.Fatal(err)
	}
	deep := func(levels int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"entries":[],"x":`)
		b.Write(bytes.Repeat([]byte("["), levels))
		b.WriteString("}")
		return b.Bytes()
	}
	const want = "nested deeper than"

	st, _, body, err := proctest.Do(ctx, &http.Client{Timeout: time.Minute}, http.MethodPost, nd.base+"/v1/context", deep(2_000_000))
	if err != nil || st != http.StatusBadRequest || !strings.Contains(string(body), want) {
		t.Fatalf("HTTP: %d %v %.200s; want 400 naming the depth", st, err, body)
	}

	nc, err := nats.Connect(nd.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m, err := nc.Request("pi.v1.context", deep(4_000_000), time.Minute)
	if err != nil || !strings.Contains(string(m.Data), want) || m.Header.Get("Nats-Service-Error-Code") != "400" {
		var data []byte
		if m != nil {
			data = m.Data
		}
		t.Fatalf("NATS: %v %.200s; want a 400 naming the depth", err, data)
	}

	// The same process, still serving.
	if !nd.Running() {
		t.Fatalf("pi-node died:\n%s", nd.Tail(30))
	}
	mustDo(t, http.MethodGet, nd.base+"/v1/sessions/"+sid, nil, http.StatusOK)
	if nd.LogContains("stack overflow") {
		t.Fatalf("the log has a stack overflow:\n%s", nd.Tail(30))
	}
}
