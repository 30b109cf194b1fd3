package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
)

// CreateOptions configure the create scenario.
type CreateOptions struct {
	Sessions    int // sessions created (default 200)
	Backlog     int // entries each is created with, in the same atomic write (default 100)
	Concurrency int // creations at once (default 4)
	Size        int // bytes of JSON per entry (default 1024)
	Transports  []string
	JSONL       bool
	JSONLDir    string
	Rounds      int // turns the ways take (default 3)
}

func (o *CreateOptions) defaults() {
	o.Sessions = cmp0(o.Sessions, 200)
	o.Backlog = cmp0(o.Backlog, 100)
	o.Concurrency = cmp0(o.Concurrency, 4)
	o.Size = cmp0(o.Size, 1024)
	o.Rounds = cmp0(o.Rounds, 3)
}

// RunCreate creates Sessions sessions, each with a backlog of Backlog
// entries (pi's delayed flush: everything before the first assistant
// message goes at once), through every way: the node's create operation,
// one raw atomic batch (jetstreamext.PublishMsgBatch) expecting an empty
// subject, and pi's file (one appendFileSync per line, fsynced once at the
// end in the fsync variant). Latency is per creation.
func RunCreate(ctx context.Context, e *Env, o CreateOptions) (*Result, error) {
	o.defaults()
	if o.Backlog+1 > e.Log.MaxBatch() {
		return nil, fmt.Errorf("a backlog of %d entries and the header exceed one atomic batch (%d records)", o.Backlog, e.Log.MaxBatch())
	}
	dir, cleanup, err := jsonlDir(o.JSONL, o.JSONLDir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ways, err := e.ways(ctx, o.Transports, true, false, o.Concurrency, dir)
	if err != nil {
		return nil, err
	}
	fill := NewFiller(o.Size)
	res := &Result{Scenario: "create"}
	res.param("sessions", o.Sessions)
	res.param("backlog entries", o.Backlog)
	res.param("concurrency", o.Concurrency)
	res.param("entry bytes", len(fill.Entry(0, "", time.Now()).Data))
	rounds := max(1, min(o.Rounds, o.Sessions))
	res.param("rounds", rounds)
	gen := NewGen(uint64(time.Now().UnixNano()))
	tallies := make([]tally, len(ways))
	for r := range rounds {
		n := share(o.Sessions, rounds, r)
		for i, w := range ways {
			phase := fmt.Sprintf("creating (round %d/%d) %s", r+1, rounds, w.name)
			lat, wall, err := createRound(ctx, e, w, n, o, fill, gen, phase)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
			tallies[i].add(lat, wall, 0)
		}
	}
	for i, w := range ways {
		r := row(w.name, w.kind, "sessions", tallies[i].lat, tallies[i].wall)
		r.Vs = w.vs
		res.Rows = append(res.Rows, r)
	}
	res.compare()
	for _, r := range res.Rows {
		res.figure("entries/s, "+r.Name, r.Rate*float64(o.Backlog), "entries/s")
	}
	return res, nil
}

// createRound creates n sessions through w, each with its backlog.
func createRound(ctx context.Context, e *Env, w way, n int, o CreateOptions, fill *Filler, gen *Gen, phase string) (latencies, time.Duration, error) {
	sids := make([]string, n)
	for i := range sids {
		sids[i] = gen.SessionID()
	}
	return runJobs(ctx, e.Progress, phase, o.Concurrency, n, n, func(ctx context.Context, j int, m *meter) error {
		now := time.Now()
		recs := make([]session.Record, 0, o.Backlog+1)
		recs = append(recs, Header(sids[j], now))
		parent := ""
		for k := range o.Backlog {
			r := fill.Entry(k, parent, now)
			recs = append(recs, r)
			parent = r.ID
		}
		return m.time(func() error {
			if _, err := w.sink.create(ctx, m.w, sids[j], recs); err != nil {
				return fmt.Errorf("session %s: %w", sids[j], err)
			}
			return nil
		})
	})
}
