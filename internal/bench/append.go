package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/session"
)

// AppendOptions configure the append scenario.
type AppendOptions struct {
	Sessions    int  // sessions written (default 100)
	Entries     int  // entries appended to each, one at a time (default 100)
	Concurrency int  // sessions written at once (default 10)
	Size        int  // bytes of JSON per entry (default 1024)
	CAS         bool // expectLastSeq on the node, the expected-sequence header on raw
	// Transports among raw, nats and http (default: all the Env reaches).
	Transports []string
	// JSONL adds pi's local file, with and without fsync, in JSONLDir
	// (default a temporary directory).
	JSONL    bool
	JSONLDir string
	// PostgresDSN adds PostgreSQL (pgSink) on that server: a row per
	// entry, a durable commit per append.
	PostgresDSN string
	Rounds      int // turns the ways take (default 3)
	// Client says whether the node's appends name a client (one per
	// writer), which moves that client's cursor on the session with each
	// append: ClientNo (the default), ClientYes, or ClientBoth, a row of
	// each for every node transport.
	Client string
}

// The values of AppendOptions.Client.
const (
	ClientNo   = "no"
	ClientYes  = "yes"
	ClientBoth = "both"
)

func (o *AppendOptions) defaults() {
	o.Sessions = cmp0(o.Sessions, 100)
	o.Entries = cmp0(o.Entries, 100)
	o.Concurrency = cmp0(o.Concurrency, 10)
	o.Size = cmp0(o.Size, 1024)
	o.Rounds = cmp0(o.Rounds, 3)
	if o.Client == "" {
		o.Client = ClientNo
	}
}

// withClients gives each node way the client setting c asks for: as it
// is (no), naming a client (yes, the row named so), or both, each
// with-client row after its row without.
func withClients(ways []way, c string) ([]way, error) {
	if c != ClientNo && c != ClientYes && c != ClientBoth {
		return nil, fmt.Errorf("client %q: %s, %s or %s", c, ClientNo, ClientYes, ClientBoth)
	}
	var out []way
	for _, w := range ways {
		ns, ok := w.sink.(*nodeSink)
		if !ok || c == ClientNo {
			out = append(out, w)
			continue
		}
		if c == ClientBoth {
			out = append(out, w)
		}
		named := *ns
		named.withClient = true
		out = append(out, way{w.name + withClientSuffix, w.kind, w.vs, &named})
	}
	return out, nil
}

func cmp0(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Names of the raw rows, which the node's rows are compared with.
const (
	httpName = "node, HTTP API"
	natsName = "node, NATS API"
	// withClientSuffix names the rows of appends that name a client.
	withClientSuffix = ", with client"
	rawName          = "raw JetStream"
	// noDedupeName is the adapter's message without its Nats-Msg-Id: what
	// the dedupe id costs, were idempotence left to the per-session CAS
	// and the entry id alone.
	noDedupeName = "raw JetStream, no dedupe id"
	relayName    = "raw JetStream via a relay"
)

// way is one row of a comparison: how the work is done and what it is
// compared with.
type way struct {
	name, kind, vs string
	sink           sink
}

// ways returns the sinks the append and create scenarios compare, raw
// first: the node's rows are compared with it.
func (e *Env) ways(ctx context.Context, transports []string, cas, relay bool, workers int, jsonlDir string) ([]way, error) {
	ts, err := e.transports(transports, relay)
	if err != nil {
		return nil, err
	}
	vs := ""
	if slices.Contains(ts, "raw") {
		vs = rawName
	}
	var out []way
	for _, t := range ts {
		switch t {
		case "raw":
			out = append(out, way{rawName, KindRaw, "", &rawSink{js: e.Raw.JS, nodes: e.rawJS(), log: e.Log, shards: e.Shards, cas: cas}})
		case "nodedupe":
			out = append(out, way{noDedupeName, KindRaw, "", &rawSink{js: e.Raw.JS, nodes: e.rawJS(), log: e.Log, cas: cas, noDedupe: true}})
		case "bare":
			prefix, err := e.bareStream(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, way{bareName, KindRaw, "", &bareSink{js: e.Raw.JS, prefix: prefix, cas: cas}})
		case "relay":
			if e.relay == nil {
				if e.relay, err = startRelay(ctx, e.conn, e.cfg); err != nil {
					return nil, err
				}
			}
			out = append(out, way{relayName, KindRaw, vs, &relaySink{nc: e.Raw.NC, r: e.relay, cas: cas}})
		case "nats":
			out = append(out, way{natsName, KindNode, vs, &nodeSink{clients: e.apis, cas: cas}})
		case "http":
			clients := make([]apiclient.Client, workers)
			for i := range clients {
				if clients[i], err = e.newHTTPFor(i); err != nil {
					return nil, err
				}
			}
			out = append(out, way{httpName, KindNode, vs, &nodeSink{clients: clients, cas: cas}})
		}
	}
	if jsonlDir != "" {
		out = append(out,
			way{"pi jsonl file", KindBaseline, "", &fileSink{dir: jsonlDir}},
			way{"pi jsonl file + fsync", KindBaseline, "", &fileSink{dir: jsonlDir, fsync: true}})
	}
	return out, nil
}

// jsonlDir returns the directory for the file baseline ("" without it)
// and a cleanup.
func jsonlDir(want bool, dir string) (string, func(), error) {
	if !want {
		return "", func() {}, nil
	}
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	return tempDir("", "pi-bench-jsonl-")
}

// RunAppend appends Entries entries, one request at a time, to each of
// Sessions sessions, Concurrency sessions at once, through every way, and
// compares entries/s and per-append latency with raw JetStream. Each way
// writes sessions of its own, created (untimed) beforehand. The ways take
// turns, Rounds times, each round a share of the sessions, so that a
// machine whose speed drifts (other work, page cache) favours none.
func RunAppend(ctx context.Context, e *Env, o AppendOptions) (*Result, error) {
	o.defaults()
	dir, cleanup, err := jsonlDir(o.JSONL, o.JSONLDir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ways, err := e.ways(ctx, o.Transports, o.CAS, true, o.Concurrency, dir)
	if err != nil {
		return nil, err
	}
	if ways, err = withClients(ways, o.Client); err != nil {
		return nil, err
	}
	if o.PostgresDSN != "" {
		pool, err := openPG(ctx, o.PostgresDSN, o.Concurrency)
		if err != nil {
			return nil, err
		}
		defer pool.Close()
		ways = append(ways, way{pgName, KindBaseline, "", &pgSink{pool: pool}})
	}
	fill := NewFiller(o.Size)
	res := &Result{Scenario: "append"}
	res.param("sessions", o.Sessions)
	res.param("entries per session", o.Entries)
	res.param("concurrency", o.Concurrency)
	res.param("entry bytes", len(fill.Entry(0, "", time.Now()).Data))
	res.param("cas", o.CAS)
	res.param("client", o.Client)
	if e.clustered {
		res.param("cluster", fmt.Sprintf("%d pi-nodes, embedded servers, R%d", len(e.procs), len(e.procs)))
	}
	rounds := max(1, min(o.Rounds, o.Sessions))
	res.param("rounds", rounds)
	gen := NewGen(uint64(time.Now().UnixNano()))
	tallies := make([]tally, len(ways))
	for r := range rounds {
		n := share(o.Sessions, rounds, r)
		for i, w := range ways {
			phase := fmt.Sprintf("(round %d/%d) %s", r+1, rounds, w.name)
			if err := appendRound(ctx, e, w, n, o, fill, gen, phase, &tallies[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
		}
	}
	for i, w := range ways {
		r := row(w.name, w.kind, "entries", tallies[i].lat, tallies[i].wall)
		r.Vs = w.vs
		res.Rows = append(res.Rows, r)
		if w.kind != KindBaseline {
			// Publishes are not API requests: what counts here is what
			// the node reads besides (a Store that has not applied the
			// previous append yet sends the node to the stream leader).
			res.figure("JetStream API requests per append, "+w.name, float64(tallies[i].api)/float64(len(tallies[i].lat)), "")
		}
		e.cpuFigures(res, w, &tallies[i])
	}
	res.compare()
	relayRow, bareRow := res.Row(relayName), res.Row(bareName)
	for _, r := range res.Rows {
		if r.Kind != KindBaseline && r.Name != bareName && bareRow != nil && bareRow.P50Ms > 0 {
			// The floor: what the adapter's message (dedupe id, Pi-*
			// headers) and the node cost beyond a bare CAS publish.
			res.figure("throughput vs the bare CAS publish, "+r.Name, r.Rate/bareRow.Rate, "×")
			res.figure("p50 latency vs the bare CAS publish, "+r.Name, r.P50Ms/bareRow.P50Ms, "×")
		}
		if r.Kind == KindNode && r.Vs != "" && !e.clustered {
			res.target("throughput vs raw, "+r.Name, r.RateRatio, "×", 0.9, true)
			res.target("p50 latency vs raw, "+r.Name, r.P50Ratio, "×", 1.1, false)
		}
		if r.Kind == KindNode && relayRow != nil && relayRow.P50Ms > 0 {
			res.figure("throughput vs the relay, "+r.Name, r.Rate/relayRow.Rate, "×")
			res.figure("p50 latency vs the relay, "+r.Name, r.P50Ms/relayRow.P50Ms, "×")
		}
	}
	if pg := res.Row(pgName); pg != nil && pg.Rate > 0 {
		// The alternative a platform team would pick, in the same run.
		for _, r := range res.Rows {
			if r.Kind != KindBaseline && !(e.clustered && r.Kind == KindNode && clusterVsPG(o.Concurrency)) {
				res.figure("throughput vs PostgreSQL, "+r.Name, r.Rate/pg.Rate, "×")
			}
		}
	}
	for _, name := range []string{natsName, httpName} {
		if without, with := res.Row(name), res.Row(name+withClientSuffix); without != nil && with != nil && without.Rate > 0 && !e.clustered {
			// What moving the writer's cursor with each append costs.
			res.figure("throughput with client vs without, "+name, with.Rate/without.Rate, "×")
		}
	}
	if e.clustered {
		clusterTargets(res, o.Concurrency)
	}
	if raw, nd := res.Row(rawName), res.Row(noDedupeName); raw != nil && nd != nil && nd.Rate > 0 && nd.P50Ms > 0 {
		// What the dedupe id costs: the adapter's message with it over
		// the same message without.
		res.figure("throughput, with the dedupe id vs without", raw.Rate/nd.Rate, "×")
		res.figure("p50 latency, with the dedupe id vs without", raw.P50Ms/nd.P50Ms, "×")
	}
	return res, nil
}

// clusterVsPG reports whether the production shape's targets compare the
// API with PostgreSQL at this many writers (issue 36: at 64 or 128).
func clusterVsPG(writers int) bool { return writers == 64 || writers == 128 }

// clusterTargets records issue 36's targets on the production shape (3
// nodes, R3), for the rows of one concurrency: the API at least 0.8× raw
// JetStream at 64 writers, at least PostgreSQL at 64 or 128 writers, and
// appends naming a client (a fleet worker's) at least 0.9× of the same
// without. Each is given for both transports, with and without a client.
func clusterTargets(res *Result, writers int) {
	pg := res.Row(pgName)
	for _, r := range res.Rows {
		if r.Kind != KindNode {
			continue
		}
		if writers == 64 && r.Vs != "" {
			res.target("throughput vs raw, "+r.Name, r.RateRatio, "×", 0.8, true)
		}
		if pg != nil && pg.Rate > 0 && clusterVsPG(writers) {
			res.target("throughput vs PostgreSQL, "+r.Name, r.Rate/pg.Rate, "×", 1.0, true)
		}
	}
	for _, name := range []string{natsName, httpName} {
		if without, with := res.Row(name), res.Row(name+withClientSuffix); without != nil && with != nil && without.Rate > 0 {
			res.target("throughput with client vs without, "+name, with.Rate/without.Rate, "×", 0.9, true)
		}
	}
}

// appendRound creates n sessions through w (untimed), then appends
// o.Entries entries to each, and adds what it measured to t.
func appendRound(ctx context.Context, e *Env, w way, n int, o AppendOptions, fill *Filler, gen *Gen, phase string, t *tally) error {
	sids := make([]string, n)
	lasts := make([]uint64, n)
	for i := range sids {
		sids[i] = gen.SessionID()
	}
	_, _, err := runJobs(ctx, e.Progress, "creating sessions "+phase, o.Concurrency, n, n,
		func(ctx context.Context, j int, m *meter) error {
			return m.time(func() (err error) {
				lasts[j], err = w.sink.create(ctx, m.w, sids[j], []session.Record{Header(sids[j], time.Now())})
				return err
			})
		})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	apiBefore, err := e.apiCalls(ctx)
	if err != nil {
		return err
	}
	cpuBefore, err := e.cpuTimes()
	if err != nil {
		return err
	}
	lat, wall, err := runJobs(ctx, e.Progress, "appending "+phase, o.Concurrency, n, n*o.Entries,
		func(ctx context.Context, j int, m *meter) error {
			parent := ""
			for k := range o.Entries {
				rec := fill.Entry(k, parent, time.Now())
				if err := m.time(func() (err error) {
					lasts[j], err = w.sink.append(ctx, m.w, sids[j], lasts[j], rec)
					return err
				}); err != nil {
					return fmt.Errorf("session %s, entry %d: %w", sids[j], k, err)
				}
				parent = rec.ID
			}
			return nil
		})
	if err != nil {
		return err
	}
	cpuAfter, err := e.cpuTimes()
	if err != nil {
		return err
	}
	apiAfter, err := e.apiCalls(ctx)
	if err != nil {
		return err
	}
	t.add(lat, wall, int64(apiAfter-apiBefore)-1) // the request for apiAfter counts itself
	t.addCPU(cpuBefore, cpuAfter)
	return nil
}

// RunAppendSweep is RunAppend at each of writers concurrencies in turn,
// on the same node, as one result: each row and figure named with its
// writers ("node, NATS API, 16 writers"). With one concurrency it is
// RunAppend.
func RunAppendSweep(ctx context.Context, e *Env, o AppendOptions, writers []int) (*Result, error) {
	if len(writers) == 1 {
		o.Concurrency = writers[0]
		return RunAppend(ctx, e, o)
	}
	var out *Result
	for _, w := range writers {
		o.Concurrency = w
		res, err := RunAppend(ctx, e, o)
		if err != nil {
			return nil, fmt.Errorf("%d writers: %w", w, err)
		}
		suffix := fmt.Sprintf(", %d writers", w)
		if w == 1 {
			suffix = ", 1 writer"
		}
		if out == nil {
			out = &Result{Scenario: res.Scenario}
			for _, p := range res.Params {
				if p.Name == "concurrency" {
					p.Value = writers
				}
				out.Params = append(out.Params, p)
			}
		}
		for _, r := range res.Rows {
			r.Name += suffix
			if r.Vs != "" {
				r.Vs += suffix
			}
			out.Rows = append(out.Rows, r)
		}
		for _, f := range res.Figures {
			f.Name += suffix
			out.Figures = append(out.Figures, f)
		}
		out.Notes = append(out.Notes, res.Notes...)
	}
	return out, nil
}
