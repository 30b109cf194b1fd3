package deploytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestComposeSyncCost measures what --sync always costs against --sync
// interval on the docker-compose cluster: the latency of one client's
// appends one after the other, and the throughput and latency of 16 clients
// appending to 16 sessions at once. It is a measurement, not a check, so it
// runs only with PI_COMPOSE_BENCH=1 (and PI_COMPOSE_TEST=1, after make
// image):
//
//	PI_COMPOSE_TEST=1 PI_COMPOSE_BENCH=1 go test -v -run TestComposeSyncCost ./internal/deploytest
func TestComposeSyncCost(t *testing.T) {
	if os.Getenv("PI_COMPOSE_TEST") != "1" || os.Getenv("PI_COMPOSE_BENCH") != "1" {
		t.Skip("measures the cost of --sync on the compose cluster with PI_COMPOSE_TEST=1 PI_COMPOSE_BENCH=1")
	}
	if _, err := docker("info"); err != nil {
		t.Skip("docker engine not answering: compose benchmark skipped")
	}
	compose, err := composeCommand()
	if err != nil {
		t.Skipf("%v: compose benchmark skipped", err)
	}
	image := makeVar(t, "IMAGE") + ":" + makeVar(t, "TAG")
	if v := os.Getenv("PI_NODE_IMAGE"); v != "" {
		image = v
	}
	for _, mode := range []string{"always", "interval"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, compose)
			c.env = append(c.env, "PI_NODE_IMAGE="+image, "PI_NODE_SYNC="+mode)
			c.down()
			t.Cleanup(func() {
				c.dumpLogs()
				c.down()
			})
			c.must("up", "-d")
			c.discover()
			testutil.WaitFor(t, 3*time.Minute, c.allReady) // every node's /readyz answering 200
			leader := c.leader(t)

			sids := make([]string, 16)
			for i := range sids {
				r, err := c.nodes[0].do(http.MethodPost, "/v1/sessions", fmt.Appendf(nil, `{"header":{"cwd":"/bench/%d"}}`, i), 10*time.Second)
				if err != nil || r.status != http.StatusCreated {
					t.Fatalf("create: %v %v", r, err)
				}
				var rep struct {
					SessionID string `json:"sessionId"`
				}
				_ = json.Unmarshal(r.body, &rep)
				sids[i] = rep.SessionID
			}

			// One client, one append at a time, through a follower and
			// through the leader (a follower forwards to the leader).
			for _, n := range []*node{c.others(leader)[0], leader} {
				lat := appendSerially(t, n, sids[0], fmt.Sprintf("s-%s-", n.name), 300)
				role := "a follower"
				if n == leader {
					role = "the stream leader"
				}
				t.Logf("measured: --sync %s, 1 client through %s: append p50 %v, p99 %v (%d appends)",
					mode, role, pct(lat, 50), pct(lat, 99), len(lat))
			}

			// 16 clients, one session each, spread over the three nodes.
			const window = 10 * time.Second
			var mu sync.Mutex
			var all []time.Duration
			var wg sync.WaitGroup
			for i, sid := range sids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := c.nodes[i%len(c.nodes)]
					var lat []time.Duration
					end := time.Now().Add(window)
					for k := 0; time.Now().Before(end); k++ {
						s := time.Now()
						r, err := n.do(http.MethodPost, "/v1/sessions/"+sid+"/entries", entryBody(fmt.Sprintf("c%02d-%05d", i, k)), 15*time.Second)
						if err != nil || r.status != http.StatusOK {
							t.Errorf("append: %v %v", r, err)
							return
						}
						lat = append(lat, time.Since(s))
					}
					mu.Lock()
					all = append(all, lat...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			t.Logf("measured: --sync %s, 16 clients on 16 sessions over 3 nodes: %.0f appends/s, p50 %v, p99 %v",
				mode, float64(len(all))/window.Seconds(), pct(all, 50), pct(all, 99))
			if out, err := docker("stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}} {{.CPUPerc}}",
				c.nodes[0].cid, c.nodes[1].cid, c.nodes[2].cid); err == nil {
				t.Logf("measured: memory after the run:\n%s", out)
			}
		})
	}
}

func appendSerially(t *testing.T, n *node, sid, prefix string, count int) []time.Duration {
	t.Helper()
	lat := make([]time.Duration, 0, count)
	for i := range count {
		s := time.Now()
		r, err := n.do(http.MethodPost, "/v1/sessions/"+sid+"/entries", entryBody(fmt.Sprintf("%s%04d", prefix, i)), 15*time.Second)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("append through %s: %v %v", n.name, r, err)
		}
		lat = append(lat, time.Since(s))
	}
	return lat
}

// pct is the p-th percentile of the durations, rounded for reading.
func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	v := s[min(len(s)-1, len(s)*p/100)]
	return strings.TrimSuffix(v.Round(10*time.Microsecond).String(), "0s")
}
