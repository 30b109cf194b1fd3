package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// ContextOptions configure the context scenario.
type ContextOptions struct {
	Sessions    int // sessions loaded (default 100)
	Entries     int // entries per session, realistic sizes (default 200)
	Requests    int // context reads, each at a random leaf of a random session (default 5000)
	Concurrency int // reads at once (default 1: latency, not load)
	Transports  []string
	Seed        uint64
	Rounds      int // turns the ways take (default 3)
}

func (o *ContextOptions) defaults() {
	o.Sessions = cmp0(o.Sessions, 100)
	o.Entries = cmp0(o.Entries, 200)
	o.Requests = cmp0(o.Requests, 5000)
	o.Concurrency = cmp0(o.Concurrency, 1)
	o.Rounds = cmp0(o.Rounds, 3)
}

// reader is one way of getting pi's context at a leaf of a session.
type reader func(ctx context.Context, w int, sid, leaf string) ([]byte, error)

// RunContext loads realistic sessions (untimed), then reads the context
// at random leaves of random sessions through every way:
//
//   - the node's context operation over NATS and HTTP, served from the
//     Store's memory;
//   - in-process, the engine's own call (Service.ContextJSON), the floor
//     under both transports;
//   - raw: what a client with only JetStream must do for the same answer —
//     read the whole session from the stream leader (jetstream.Log.Read,
//     the adapter's authoritative read) and build the context itself with
//     internal/tree. There is no cheaper raw equivalent: JetStream holds
//     lines, not trees, and a context needs the path from the root.
func RunContext(ctx context.Context, e *Env, o ContextOptions) (*Result, error) {
	o.defaults()
	ts, err := e.transports(o.Transports, false)
	if err != nil {
		return nil, err
	}
	loaded, err := Load(ctx, e.Raw.JS, e.Log, LoadOptions{Sessions: o.Sessions, Entries: o.Sessions * o.Entries, Seed: o.Seed, KeepIDs: true}, e.Progress)
	if err != nil {
		return nil, err
	}
	if err := e.waitApplied(ctx, loaded.LastSeq); err != nil {
		return nil, fmt.Errorf("waiting for the node to apply the load: %w", err)
	}
	res := &Result{Scenario: "context"}
	res.param("sessions", o.Sessions)
	res.param("entries per session", o.Entries)
	res.param("json bytes per entry", loaded.JSONBytes/int64(max(1, loaded.Records)))
	res.param("requests", o.Requests)
	res.param("concurrency", o.Concurrency)

	type req struct{ sid, leaf string }
	r := rand.New(rand.NewPCG(o.Seed, 11))
	reqs := make([]req, o.Requests)
	for i := range reqs {
		s := &loaded.Sessions[r.IntN(len(loaded.Sessions))]
		reqs[i] = req{s.ID, s.EntryIDs[r.IntN(len(s.EntryIDs))]}
	}
	const rawReadName = "raw read + client-side build"
	type way struct {
		name, kind, vs string
		read           reader
	}
	var ways []way
	for _, t := range ts {
		switch t {
		case "raw":
			ways = append(ways, way{rawReadName, KindRaw, "", rawContext(e.Log)})
		case "nats":
			ways = append(ways, way{"node, NATS API", KindNode, rawReadName, apiContext([]apiclient.Client{e.NATS})})
		case "http":
			clients := make([]apiclient.Client, o.Concurrency)
			for i := range clients {
				if clients[i], err = e.newHTTP(); err != nil {
					return nil, err
				}
			}
			ways = append(ways, way{"node, HTTP API", KindNode, rawReadName, apiContext(clients)})
		}
	}
	if e.Node != nil {
		svc := e.Node.Service
		ways = append(ways, way{"node engine, in-process", KindNode, rawReadName, func(ctx context.Context, _ int, sid, leaf string) ([]byte, error) {
			b, _, err := svc.ContextJSON(ctx, sid, service.Leaf{ID: leaf}, false)
			return b, err
		}})
	}
	rounds := max(1, min(o.Rounds, o.Requests))
	res.param("rounds", rounds)
	tallies := make([]tally, len(ways))
	for r, from := 0, 0; r < rounds; r++ {
		n := share(o.Requests, rounds, r)
		for i, w := range ways {
			phase := fmt.Sprintf("reading contexts (round %d/%d) %s", r+1, rounds, w.name)
			lat, wall, err := runJobs(ctx, e.Progress, phase, o.Concurrency, n, n, func(ctx context.Context, j int, m *meter) error {
				q := reqs[from+j]
				return m.time(func() error {
					out, err := w.read(ctx, m.w, q.sid, q.leaf)
					if err == nil && len(out) == 0 {
						err = fmt.Errorf("empty context")
					}
					if err != nil {
						return fmt.Errorf("context of %s at %s: %w", q.sid, q.leaf, err)
					}
					return nil
				})
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
			tallies[i].add(lat, wall, 0)
		}
		from += n
	}
	for i, w := range ways {
		rw := row(w.name, w.kind, "reads", tallies[i].lat, tallies[i].wall)
		rw.Vs = w.vs
		res.Rows = append(res.Rows, rw)
	}
	res.compare()
	for _, rw := range res.Rows {
		if rw.Kind == KindNode {
			res.target("p99, "+rw.Name, rw.P99Ms, "ms", 1, false)
		}
	}
	return res, nil
}

func apiContext(clients []apiclient.Client) reader {
	return func(ctx context.Context, w int, sid, leaf string) ([]byte, error) {
		return clients[w%len(clients)].Do(ctx, wire.ContextRequest{SessionID: sid, Leaf: wire.EntryID(leaf)})
	}
}

// rawContext reads the session from the stream leader and builds the
// context as the Store would, but for this one read.
func rawContext(log *jetstream.Log) reader {
	return func(ctx context.Context, _ int, sid, leaf string) ([]byte, error) {
		recs, err := log.Read(ctx, sid, 0)
		if err != nil {
			return nil, err
		}
		h, err := tree.ParseHeader(recs[0].Data)
		if err != nil {
			return nil, err
		}
		s := tree.NewSession(h)
		s.Grow(len(recs) - 1)
		for _, r := range recs[1:] {
			if e, err := tree.ParseEntry(r.Data); err == nil && !r.IsHeader() {
				s.Append(e)
			}
		}
		i, ok := s.Index(leaf)
		if !ok {
			return nil, fmt.Errorf("leaf %s: %w", leaf, wire.ErrNotFound)
		}
		c := s.ContextAt(i)
		return c.AppendJSON(nil, tree.ContextOptions{}), nil
	}
}
