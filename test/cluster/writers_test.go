//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// ack is one acknowledged append.
type ack struct {
	writer   int
	id       string
	seq      uint64
	node     int       // index of the node that acknowledged it
	sent     time.Time // when the acknowledged attempt was sent
	at       time.Time // when its reply arrived
	attempts int
}

// writer appends a chain of entries to its own session, one at a time,
// through the HTTP API of every node in turn. An append that fails in a
// way that leaves its outcome unknown (503, a timeout, a refused or reset
// connection) is sent again, byte for byte, to the next node until one
// acknowledges it: the idempotent retry pi-node documents.
type writer struct {
	idx   int
	sid   string
	bases []string
	hc    *http.Client
	turn  int // next node to send to
	prog  *progress

	acks    []ack
	errors  map[string]int // failed attempts by kind
	pending string         // the entry being retried when the writer stopped, if any
}

// run appends until stop is closed (finishing the entry in flight), or ctx
// ends. An answer that retrying cannot fix (4xx) ends it with an error.
func (w *writer) run(ctx context.Context, stop <-chan struct{}) error {
	parent := ""
	for n := 1; ; n++ {
		select {
		case <-stop:
			return nil
		default:
		}
		e := proctest.NewEntry(fmt.Sprintf("w%02d-%06d", w.idx, n), parent, fmt.Sprintf("writer %d entry %d", w.idx, n), time.Now())
		body := proctest.AppendBody(e)
		w.pending = e.ID
		a, err := w.appendUntilAcked(ctx, body, e.ID)
		if err != nil {
			return err
		}
		w.pending = ""
		w.acks = append(w.acks, a)
		w.prog.acked(a.node, a.seq)
		parent = e.ID
	}
}

func (w *writer) appendUntilAcked(ctx context.Context, body []byte, id string) (ack, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return ack{}, fmt.Errorf("writer %d: entry %s not acknowledged in time: %w", w.idx, id, err)
		}
		node := w.turn % len(w.bases)
		w.turn++
		sent := time.Now()
		st, _, data, err := proctest.Do(ctx, w.hc, http.MethodPost, w.bases[node]+"/v1/sessions/"+w.sid+"/entries", body)
		if err == nil && st == http.StatusOK {
			var wr proctest.WriteResult
			if err := json.Unmarshal(data, &wr); err != nil || len(wr.Entries) != 1 || wr.Entries[0].ID != id || wr.Entries[0].Seq == 0 {
				return ack{}, fmt.Errorf("writer %d: entry %s: bad reply %s (%v)", w.idx, id, data, err)
			}
			return ack{writer: w.idx, id: id, seq: wr.Entries[0].Seq, node: node, sent: sent, at: time.Now(), attempts: attempt + 1}, nil
		}
		kind := proctest.ErrorKind(st, err)
		w.errors[kind]++
		if !retryable(st, err) && st != http.StatusInternalServerError {
			// 500 is retried but counted: it is a bug worth reporting, not
			// a reason to stop the load. Anything else 4xx is final.
			return ack{}, fmt.Errorf("writer %d: entry %s via node %d: %d %s", w.idx, id, node, st, data)
		}
		proctest.Backoff(ctx, attempt, len(w.bases))
	}
}

// median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
