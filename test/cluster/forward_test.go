//go:build linux

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestForwardLargeBodies: on a sharded cluster whose nodes hold a share,
// a request to a node that does not hold the session's shard gets the
// answer a holder gives, also with a body larger than a NATS message
// (the API takes 9 MiB; NATS carries 8): two entries of 4.4 MiB are
// stored (they were refused with 503, "maximum payload exceeded", which
// clients retried in vain), one of 8.5 MiB is 413.
func TestForwardLargeBodies(t *testing.T) {
	skipShort(t)
	t.Parallel()
	if testShards() > 1 {
		t.Skipf("starts its own store of 3 shards; PI_NODE_SHARDS=%d would give every node another count", testShards())
	}
	const shards = 3
	nodes := startEmbeddedClusterWith(t, 3, "--shards", fmt.Sprint(shards))
	by, _, _ := heldByExactly(t, nodes, shards, 2, readyTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: time.Minute}

	sid := testutil.SessionID(t)
	k := shard.Of(sid, shards)
	var holder, other *piNode
	for _, nd := range nodes {
		if slices.Contains(by[k], nd.name) {
			holder = nd
		} else {
			other = nd
		}
	}
	if _, err := createSession(ctx, hc, []string{holder.base}, 0, sid, "/work/large", time.Now()); err != nil {
		t.Fatal(err)
	}
	big := func(id, parent string, n int) proctest.Entry {
		return proctest.NewEntry(id, parent, strings.Repeat("x", n), time.Now())
	}
	const mib = 1 << 20
	for i, nd := range []*piNode{holder, other} {
		a, b := fmt.Sprintf("a%07d", i), fmt.Sprintf("b%07d", i)
		parent := ""
		if i > 0 {
			parent = "b0000000"
		}
		body := proctest.AppendBody(big(a, parent, 44*mib/10), big(b, a, 44*mib/10))
		st, hdr, data, err := proctest.Do(ctx, hc, http.MethodPost, nd.base+"/v1/sessions/"+sid+"/entries", body)
		if err != nil || st != http.StatusOK {
			t.Errorf("append of %.1f MiB through %s (holds shard %d: %v): %d %v %.300s", float64(len(body))/mib, nd.name, k, nd == holder, st, err, data)
		}
		t.Logf("append of %.1f MiB through %s: %d, served by %q", float64(len(body))/mib, nd.name, st, hdr.Get("Pi-Served-By"))

		body = proctest.AppendBody(big(fmt.Sprintf("c%07d", i), b, 85*mib/10))
		// The node reads the session before it publishes, and the
		// publish is what finds the entry too large: under load that read
		// may answer 503 or 504 first, which a client asks again
		// (docs/API.md). A CI run saw a 504 there.
		for attempt := 0; ; attempt++ {
			st, _, data, err = proctest.Do(ctx, hc, http.MethodPost, nd.base+"/v1/sessions/"+sid+"/entries", body)
			if err != nil || st != http.StatusServiceUnavailable && st != http.StatusGatewayTimeout || attempt == 20 {
				break
			}
			proctest.Backoff(ctx, attempt, 1)
		}
		if err != nil || st != http.StatusRequestEntityTooLarge {
			t.Errorf("append of an 8.5 MiB entry through %s (holds shard %d: %v): %d %v %.300s, want 413", nd.name, k, nd == holder, st, err, data)
		}
	}
}
