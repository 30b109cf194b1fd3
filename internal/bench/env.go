package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/jetstream"
)

// EnvOptions say where the append, create and context scenarios run: an
// in-process node (Embedded), or a running pi-node reached through its
// NATS server (Server: both the API and the raw baselines, which must run
// on the node's own server) and optionally its HTTP listener.
type EnvOptions struct {
	Embedded      bool
	Dir           string // embedded data dir; "" makes a temporary one
	SyncAlways    bool   // embedded: pi-node's --sync always
	MemoryBudget  int64  // embedded: pi-node's --memory-budget
	SnapshotEvery time.Duration

	Server                string // NATS URL of a running node's server
	HTTP                  string // its HTTP API ("": HTTP is not measured)
	Token                 string // HTTP bearer token
	Creds, User, Password string // NATS authentication
	// Stream and SubjectPrefix name the node's stream for the raw side
	// (default PI_SESSIONS and pi.sess).
	Stream, SubjectPrefix string

	// Procs, when set, starts a nats-server and pi-nodes as processes
	// (in Dir, or a temporary dir) instead, and reads their CPU time.
	Procs *ProcOptions
	// Shards is the node's --shards (0: 1), for the node this starts and
	// the raw side, which then publishes each session to its shard's
	// stream.
	Shards int
}

// Env is what a scenario measures: the node's API over NATS and HTTP, and
// raw JetStream on the same server through a connection of its own.
type Env struct {
	NATS    apiclient.Client // the node's API over NATS
	HTTPURL string           // "" when HTTP is not measured
	Token   string
	Raw     *jetstream.Conn // raw JetStream, as a client without pi-node would use it
	Log     *jetstream.Log  // builds the adapter's exact messages (Log.Msg)
	// Shards is the log of every shard, by shard, for the raw side (Log is
	// Shards[0]).
	Shards []*jetstream.Log
	Node   *Node // the in-process node, when embedded
	// Progress, when set, is told how far each phase is.
	Progress Progress

	conn  jetstream.ConnConfig // how Raw connected: the relay connects alike
	cfg   jetstream.Config     // the node's stream
	tmp   string               // temporary data dir to remove
	relay *relay               // started on first use
	// The bare publish's stream, made on first use ("": not yet).
	bareName, barePrefix string
	procs                []*cpuProc // with EnvOptions.Procs: the server first
	// With an embedded cluster (ProcOptions.Cluster): every node's client
	// and HTTP URL, the NATS API and raw JetStream through each node
	// (index 0 is NATS and Raw), writer w using node w mod their number.
	clustered bool
	httpURLs  []string
	// PprofURLs are the nodes' profile endpoints (ProcOptions.Pprof):
	// go tool pprof URL/debug/pprof/profile while a row runs.
	PprofURLs []string
	apis      []apiclient.Client
	raws      []*jetstream.Conn
}

// Open connects to a running node, or starts one in this process.
func Open(ctx context.Context, o EnvOptions) (e *Env, err error) {
	e = &Env{HTTPURL: o.HTTP, Token: o.Token}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	cfg := jetstream.NewConfig()
	if o.Stream != "" {
		cfg.Stream = o.Stream
	}
	if o.SubjectPrefix != "" {
		cfg.SubjectPrefix = o.SubjectPrefix
	}
	server := o.Server
	var others []string // a cluster's other nodes' client URLs
	if o.Embedded && o.Procs != nil {
		return nil, errors.New("a node in this process or processes, not both")
	}
	if o.Embedded || o.Procs != nil {
		dir := o.Dir
		if dir == "" {
			if e.tmp, err = os.MkdirTemp("", "pi-bench-"); err != nil {
				return nil, err
			}
			dir = e.tmp
		}
		if o.Procs != nil {
			po := *o.Procs
			po.Shards = o.Shards
			var set procSet
			if set, err = startProcs(ctx, po, dir, o.SyncAlways); err != nil {
				return nil, err
			}
			e.procs, server, e.HTTPURL, e.clustered = set.procs, set.nats[0], set.http[0], set.clustered
			if set.clustered {
				e.httpURLs, others, e.PprofURLs = set.http, set.nats[1:], set.pprof
			}
		} else if e.Node, err = StartNode(ctx, NodeOptions{Dir: dir, SyncAlways: o.SyncAlways, MemoryBudget: o.MemoryBudget, SnapshotEvery: o.SnapshotEvery, Shards: o.Shards}); err != nil {
			return nil, err
		}
		if e.Node != nil {
			server, e.HTTPURL, cfg = e.Node.NATSURL, e.Node.HTTPURL, e.Node.Config
		}
	}
	cc := jetstream.NewConnConfig(server)
	cc.Name, cc.CredsFile, cc.User, cc.Password = "pi-bench raw", o.Creds, o.User, o.Password
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if e.Raw, err = jetstream.Connect(cctx, cc); err != nil {
		return nil, err
	}
	if _, err := e.Raw.JS.Stream(cctx, cfg.Stream); err != nil {
		return nil, fmt.Errorf("stream %s on %s: %w (the raw baselines run on the node's own stream: is --server the node's NATS server?)", cfg.Stream, server, err)
	}
	e.Log, e.conn, e.cfg = jetstream.NewLog(e.Raw.JS, cfg), cc, cfg
	e.Shards = []*jetstream.Log{e.Log}
	for k := 1; k < o.Shards; k++ {
		e.Shards = append(e.Shards, jetstream.NewLog(e.Raw.JS, cfg.Shard(k)))
	}
	if e.NATS, err = apiclient.DialNATS(apiclient.NATSOptions{URL: server, Name: "pi-bench", Creds: o.Creds, User: o.User, Password: o.Password}); err != nil {
		return nil, err
	}
	e.apis, e.raws = []apiclient.Client{e.NATS}, []*jetstream.Conn{e.Raw}
	if err := e.dialNodes(ctx, cc, others); err != nil {
		return nil, err
	}
	return e, nil
}

// dialNodes connects the NATS API and raw JetStream to each of the other
// nodes of a cluster too, as cc connected to the first.
func (e *Env) dialNodes(ctx context.Context, cc jetstream.ConnConfig, urls []string) error {
	for _, u := range urls {
		c := cc
		c.URLs = []string{u}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		raw, err := jetstream.Connect(cctx, c)
		cancel()
		if err != nil {
			return err
		}
		e.raws = append(e.raws, raw)
		api, err := apiclient.DialNATS(apiclient.NATSOptions{URL: u, Name: "pi-bench"})
		if err != nil {
			return err
		}
		e.apis = append(e.apis, api)
	}
	return nil
}

// rawJS is raw JetStream through each node.
func (e *Env) rawJS() []natsjs.JetStream {
	out := make([]natsjs.JetStream, len(e.raws))
	for i, c := range e.raws {
		out[i] = c.JS
	}
	return out
}

// Close disconnects, stops the in-process node and removes its temporary
// data.
func (e *Env) Close() error {
	var errs []error
	if e.relay != nil {
		e.relay.close()
	}
	if e.Raw != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, e.dropBareStream(ctx))
		cancel()
	}
	if e.NATS != nil {
		e.NATS.Close()
	}
	if e.Raw != nil {
		e.Raw.Close()
	}
	for i := 1; i < len(e.apis); i++ {
		e.apis[i].Close()
	}
	for i := 1; i < len(e.raws); i++ {
		e.raws[i].Close()
	}
	if e.Node != nil {
		errs = append(errs, e.Node.Close())
	}
	if e.clustered {
		errs = append(errs, stopAll(e.procs, time.Minute))
	} else {
		for i := len(e.procs) - 1; i >= 0; i-- { // the nodes before their server
			_, err := e.procs[i].stop(time.Minute)
			errs = append(errs, err)
		}
	}
	if e.tmp != "" {
		errs = append(errs, os.RemoveAll(e.tmp))
	}
	return errors.Join(errs...)
}

// newHTTP returns an HTTP client of the node's API. Each worker gets its
// own: net/http keeps at most two idle connections per host and transport,
// so workers sharing one client would open and close connections all the
// time and measure that instead of the node.
func (e *Env) newHTTP() (apiclient.Client, error) {
	return apiclient.NewHTTP(apiclient.HTTPOptions{URL: e.HTTPURL, Token: e.Token})
}

// newHTTPFor returns worker w's HTTP client: of the node it writes
// through in a cluster, else of the node.
func (e *Env) newHTTPFor(w int) (apiclient.Client, error) {
	if len(e.httpURLs) == 0 {
		return e.newHTTP()
	}
	return apiclient.NewHTTP(apiclient.HTTPOptions{URL: e.httpURLs[w%len(e.httpURLs)], Token: e.Token})
}

// waitApplied waits until the node's Store has applied seq, with the
// API's own read-your-writes wait (minSeq) rather than polling.
func (e *Env) waitApplied(ctx context.Context, seq uint64) error {
	return waitAPI(ctx, e.NATS, seq)
}

// apiCalls returns how many JetStream API requests the account has
// served, the request for this figure included.
func (e *Env) apiCalls(ctx context.Context) (uint64, error) {
	ai, err := e.Raw.JS.AccountInfo(ctx)
	if err != nil {
		return 0, fmt.Errorf("account info: %w", err)
	}
	return ai.API.Total, nil
}

// transports lists what a scenario measures, in table order: the raw
// equivalent first, then (where the scenario has one) the relay, then the
// node over each transport it can reach.
func (e *Env) transports(want []string, relay bool) ([]string, error) {
	if len(want) == 0 {
		want = []string{"raw"}
		if relay && len(e.Shards) <= 1 {
			want = append(want, "bare", "nodedupe", "relay")
		}
		want = append(want, "nats")
		if e.HTTPURL != "" {
			want = append(want, "http")
		}
	}
	for _, t := range want {
		switch t {
		case "raw", "nats":
		case "relay", "bare", "nodedupe":
			if !relay {
				return nil, fmt.Errorf("transport %s: only the append scenario has one", t)
			}
			if len(e.Shards) > 1 {
				return nil, fmt.Errorf("transport %s: publishes to one stream; with shards, raw publishes to each session's shard", t)
			}
		case "http":
			if e.HTTPURL == "" {
				return nil, errors.New("transport http: no HTTP URL of the node (--http)")
			}
		default:
			return nil, fmt.Errorf("unknown transport %q (raw, bare, nodedupe, relay, nats or http)", t)
		}
	}
	return want, nil
}
