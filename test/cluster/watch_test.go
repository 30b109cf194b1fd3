//go:build linux

package cluster

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// nodeWatch is what one node looked like from outside while the stream
// failed over, polled every 50 ms: whether /readyz said 200, and how far
// its Store had applied the log (Pi-Applied-Seq of a small list read,
// answered from memory without asking JetStream). The two are polled
// separately, because /readyz itself waits on JetStream (up to 2 s).
type nodeWatch struct {
	name    string
	ready   []watchSample
	applied []watchSample
}

type watchSample struct {
	at  time.Time // when the answer arrived
	ok  bool      // /readyz: 200
	seq uint64    // Pi-Applied-Seq (0: the read failed)
}

// nodeWatches are the watches of several nodes.
type nodeWatches struct {
	nodes []*nodeWatch
	wg    sync.WaitGroup
}

// watchNodes polls every node until stop is closed.
func watchNodes(nodes []*piNode, stop <-chan struct{}) *nodeWatches {
	ws := &nodeWatches{}
	hc := &http.Client{Timeout: 3 * time.Second} // /readyz bounds its own check to 2 s
	for _, nd := range nodes {
		w := &nodeWatch{name: nd.name}
		ws.nodes = append(ws.nodes, w)
		ws.poll(stop, func() {
			st, _, _, err := proctest.Do(context.Background(), hc, http.MethodGet, nd.base+"/readyz", nil)
			w.ready = append(w.ready, watchSample{at: time.Now(), ok: err == nil && st == http.StatusOK})
		})
		ws.poll(stop, func() {
			s := watchSample{}
			if testShards() > 1 {
				// Shard 0's Store (the stream whose leader the tests
				// kill): the catalog's header is a sum over the shards.
				if st, err := status(nd.base); err == nil && len(st.Store.Shards) > 0 {
					s.seq = st.Store.Shards[0].Applied
				}
				s.at = time.Now()
				w.applied = append(w.applied, s)
				return
			}
			st, hdr, _, err := proctest.Do(context.Background(), hc, http.MethodGet, nd.base+"/v1/sessions?limit=1", nil)
			if err == nil && st == http.StatusOK {
				s.seq, _ = strconv.ParseUint(hdr.Get("Pi-Applied-Seq"), 10, 64)
			}
			s.at = time.Now()
			w.applied = append(w.applied, s)
		})
	}
	return ws
}

// poll runs sample every 50 ms in a goroutine of its own until stop.
func (ws *nodeWatches) poll(stop <-chan struct{}, sample func()) {
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
}

// done waits for the pollers (after stop was closed) and returns the watches.
func (ws *nodeWatches) done() []*nodeWatch {
	ws.wg.Wait()
	return ws.nodes
}

// notReady returns how long /readyz did not say 200: in total, and the
// longest stretch. Each sample counts until the next one.
func (w *nodeWatch) notReady() (total, longest time.Duration) {
	var since time.Time
	for k, s := range w.ready {
		if k > 0 && !w.ready[k-1].ok {
			total += s.at.Sub(w.ready[k-1].at)
		}
		switch {
		case s.ok:
			since = time.Time{}
		case since.IsZero():
			since = s.at
		default:
			longest = max(longest, s.at.Sub(since))
		}
	}
	return total, longest
}

// appliedAt returns when the node was first seen to have applied seq.
func (w *nodeWatch) appliedAt(seq uint64) (time.Time, bool) {
	for _, s := range w.applied {
		if s.seq >= seq {
			return s.at, true
		}
	}
	return time.Time{}, false
}
