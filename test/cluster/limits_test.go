//go:build linux

package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestConnectionLimits attacks a real pi-node with small caps
// (docs/SECURITY.md, Limits): a watch and a request over --max-watches and
// --max-requests are 503 unavailable naming the flag; more half-sent
// requests than --max-connections wait in the kernel's backlog instead of
// taking a file descriptor each (21,000 of them once exhausted a node's
// 20,000: accept4: too many open files), the node logs no accept error and
// serves again as soon as they close; every refusal is in /metrics.
func TestConnectionLimits(t *testing.T) {
	skipShort(t)
	t.Parallel()
	const maxConns, maxWatches, maxRequests = 50, 2, 1
	ports := testutil.FreePorts(t, 3)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	base, metricsBase := "http://"+addr, fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	nd := proctest.New(t, "solo", piNodeBin, "--node-name", "solo", "--data-dir", t.TempDir(),
		"--http-listen", addr, "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--min-seq-timeout", "10m",
		"--max-connections", fmt.Sprint(maxConns), "--max-watches", fmt.Sprint(maxWatches), "--max-requests", fmt.Sprint(maxRequests))
	nd.Start(t)
	testutil.WaitFor(t, readyTimeout, func() error { return proctest.Ready(base) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sid := testutil.SessionID(t)
	if _, err := createSession(ctx, proctest.ProbeClient, []string{base}, 0, sid, "/limits", time.Now()); err != nil {
		t.Fatal(err)
	}
	metric := func(name, limit string) float64 {
		t.Helper()
		got, err := proctest.Metrics(metricsBase)
		if err != nil {
			t.Fatal(err)
		}
		return got[proctest.Series(name, "limit", limit)]
	}
	refusedAt := func(st int, body []byte, flag string) error {
		if st != http.StatusServiceUnavailable || !strings.Contains(string(body), `"unavailable"`) || !strings.Contains(string(body), flag) {
			return fmt.Errorf("over the cap: %d %s, want 503 unavailable naming %s", st, body, flag)
		}
		return nil
	}

	// Watches: two stay open, the third is refused.
	hc := &http.Client{}
	for range maxWatches {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/sessions/"+sid+"/watch", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch under the cap: %d", resp.StatusCode)
		}
	}
	st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, base+"/v1/sessions/"+sid+"/watch", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := refusedAt(st, body, "--max-watches"); err != nil {
		t.Error(err)
	}

	// Requests: a read waiting for a sequence that never comes holds the
	// only slot; the next request is refused.
	rctx, rcancel := context.WithCancel(ctx)
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _, _, _ = proctest.Do(rctx, hc, http.MethodGet, base+"/v1/sessions/"+sid+"?minSeq=1000000000", nil)
	}()
	testutil.WaitFor(t, readyTimeout, func() error {
		if n := metric("pi_api_limit_current", "requests"); n != maxRequests {
			return fmt.Errorf("%v requests in flight, want %d", n, maxRequests)
		}
		return nil
	})
	st, _, body, err = proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, base+"/v1/sessions/"+sid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := refusedAt(st, body, "--max-requests"); err != nil {
		t.Error(err)
	}
	rcancel()
	<-held
	if n := metric("pi_api_limit_refused_total", "watches"); n != 1 {
		t.Errorf("pi_api_limit_refused_total{limit=watches} = %v, want 1", n)
	}
	if n := metric("pi_api_limit_refused_total", "requests"); n != 1 {
		t.Errorf("pi_api_limit_refused_total{limit=requests} = %v, want 1", n)
	}
	hc.CloseIdleConnections()

	// Connections: more half-sent requests than the cap.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range maxConns + 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, readyTimeout, func() error {
		if n := metric("pi_api_limit_refused_total", "connections"); n < 1 {
			return fmt.Errorf("pi_api_limit_refused_total{limit=connections} = %v, want at least 1", n)
		}
		return nil
	})
	if n := metric("pi_api_limit_current", "connections"); n > maxConns {
		t.Errorf("%v connections open, over the cap of %d", n, maxConns)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	testutil.WaitFor(t, readyTimeout, func() error {
		st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, base+"/v1/sessions/"+sid, nil)
		if err != nil || st != http.StatusOK {
			return fmt.Errorf("a read once the connections closed: %d %s %v", st, body, err)
		}
		return nil
	})
	// A keep-alive connection still works through the listener's slots.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 3 {
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("keep-alive request %d: %v", i, err)
		}
		resp.Body.Close()
	}
	if out, _ := nd.Output(); strings.Contains(out, "Accept error") || strings.Contains(out, "too many open files") {
		t.Errorf("the node logged accept errors:\n%s", nd.Tail(20))
	}
}
