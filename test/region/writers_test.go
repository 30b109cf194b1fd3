//go:build linux

package region

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// ack is one acknowledged append.
type ack struct {
	writer string
	sid    string
	id     string
	parent string
	seq    uint64
	sent   time.Time // when the acknowledged attempt was sent
	at     time.Time // when its reply arrived
}

// writer appends a chain of entries to one session through the nodes of
// its own region, as an agent worker in that region would: an attempt
// whose outcome is unknown (503, a timeout, a refused connection) is sent
// again, byte for byte, to the next node of the region.
//
// When the region's nodes answer that the writer's last entry is unknown
// — it was acknowledged by a home region that was then lost before its
// mirror got it — the writer picks the session up where the log now ends
// for it: it continues from its last entry that is still there, as pi does
// when it reopens a session, and records the missing ones as lost (the
// RPO as a client sees it). Failback brings them back, as a branch beside
// the continuation.
type writer struct {
	name  string // "a03": region and index
	sid   string
	bases []string
	hc    *http.Client
	pause time.Duration // between two entries: an agent's pace, not a load test

	mu     sync.Mutex
	acks   []ack
	lost   []ack // acknowledged entries found missing at a resync
	errors map[string]int
	turn   int
	ended  error // run's error, once it ended on an answer no retry fixes
}

func (w *writer) snapshot() (acks, lost []ack) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ack(nil), w.acks...), append([]ack(nil), w.lost...)
}

// run appends until stop is closed or ctx ends; an answer that no retry
// can fix ends it with an error.
func (w *writer) run(ctx context.Context, stop <-chan struct{}, root string) error {
	parent := root
	for n := 1; ; n++ {
		select {
		case <-stop:
			return nil
		case <-time.After(w.pause):
		}
		id := fmt.Sprintf("%s-%05d", w.name, n)
		e := proctest.NewEntry(id, parent, fmt.Sprintf("writer %s entry %d", w.name, n), time.Now())
		for attempt := 0; ; attempt++ {
			if ctx.Err() != nil {
				return fmt.Errorf("writer %s: entry %s not acknowledged in time: %w", w.name, e.ID, ctx.Err())
			}
			base := w.bases[w.turn%len(w.bases)]
			w.turn++
			sent := time.Now()
			st, _, data, err := proctest.Do(ctx, w.hc, http.MethodPost, base+"/v1/sessions/"+w.sid+"/entries", proctest.AppendBody(e))
			switch {
			case err == nil && st == http.StatusOK:
				var wr proctest.WriteResult
				if err := json.Unmarshal(data, &wr); err != nil || len(wr.Entries) != 1 || wr.Entries[0].ID != e.ID {
					return fmt.Errorf("writer %s: entry %s: bad reply %s (%v)", w.name, e.ID, data, err)
				}
				w.mu.Lock()
				w.acks = append(w.acks, ack{writer: w.name, sid: w.sid, id: e.ID, parent: parent, seq: wr.Entries[0].Seq, sent: sent, at: time.Now()})
				w.mu.Unlock()
				parent = e.ID
			case err == nil && st == http.StatusBadRequest && strings.Contains(string(data), "unknown parent"):
				p, err := w.resync(ctx, root)
				if err != nil {
					return err
				}
				// A new id: the entry as first sent may be stored in the
				// lost region with the old parent, and comes back with it.
				parent = p
				e = proctest.NewEntry(fmt.Sprintf("%s-%05d-r%d", w.name, n, attempt), parent, e.Message.Content, time.Now())
				continue
			case err != nil || st == http.StatusServiceUnavailable || st == http.StatusGatewayTimeout:
				w.mu.Lock()
				w.errors[proctest.ErrorKind(st, err)]++
				w.mu.Unlock()
				proctest.Backoff(ctx, attempt, len(w.bases))
				continue
			default:
				return fmt.Errorf("writer %s: entry %s via %s: %d %s", w.name, e.ID, base, st, data)
			}
			break
		}
	}
}

// resync reads the session from the writer's next node and returns the
// writer's last acknowledged entry that it holds, moving the later ones
// to lost. A read that times out or is answered 503 or 504 (a node of a
// region just back, its Stores still catching up with the home's
// streams) is tried again, on the next node, as the appends are.
func (w *writer) resync(ctx context.Context, root string) (string, error) {
	var es []storedEntry
	for attempt := 0; ; attempt++ {
		base := w.bases[w.turn%len(w.bases)]
		w.turn++
		var err error
		if es, err = entries(ctx, base, w.sid, 0); err == nil {
			break
		}
		var se *statusError
		switch {
		case ctx.Err() != nil:
			return "", fmt.Errorf("writer %s: resync: %w", w.name, err)
		case errors.As(err, &se) && se.status != http.StatusServiceUnavailable && se.status != http.StatusGatewayTimeout:
			return "", fmt.Errorf("writer %s: resync: %w", w.name, err)
		}
		st := 0
		if se != nil {
			st, err = se.status, nil
		}
		w.mu.Lock()
		w.errors["resync: "+proctest.ErrorKind(st, err)]++
		w.mu.Unlock()
		proctest.Backoff(ctx, attempt, len(w.bases))
	}
	have := map[string]bool{}
	for _, e := range es {
		have[e.Entry.ID] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := len(w.acks)
	for keep > 0 && !have[w.acks[keep-1].id] {
		keep--
	}
	w.lost = append(w.lost, w.acks[keep:]...)
	w.acks = w.acks[:keep]
	if keep == 0 {
		return root, nil
	}
	return w.acks[keep-1].id, nil
}
