package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
)

// NodeOptions configure an in-process node.
type NodeOptions struct {
	// Dir is the data dir, as pi-node's --data-dir: JetStream's files, and
	// the Store's snapshots in Dir/store.
	Dir string
	// SyncAlways fsyncs every write before acknowledging it (pi-node's
	// default --sync always).
	SyncAlways bool
	// MemoryBudget is pi-node's --memory-budget (0: no limit).
	MemoryBudget int64
	// SnapshotEvery is pi-node's --snapshot-interval; 0 disables snapshots.
	SnapshotEvery time.Duration
	// Shards is pi-node's --shards (0: 1).
	Shards int
}

// Node is pi-node in this process, wired as cmd/pi-node wires it — an
// embedded JetStream server, the stream and bucket provisioned, a Store
// following the log, the Service, the HTTP API and the NATS micro service —
// so that the raw baselines run on the very server the node uses, and the
// Store's memory can be read from the Go heap. Start it in two steps
// (StartServer, then StartService) to time them apart.
type Node struct {
	Opts    NodeOptions
	NATSURL string // the embedded server's client URL
	HTTPURL string // http://127.0.0.1:PORT
	Config  jetstream.Config
	Conn    *jetstream.Conn // the node's own connection
	Log     *jetstream.Log  // shard 0's
	Store   *store.Store    // shard 0's
	Service *service.Service
	// With Shards above 1: every shard's log and Store, and the log over
	// all of them.
	ShardLogs []*shard.Log
	Stores    *store.Set
	sharded   *shard.Sharded

	server *embedded.Server
	api    *api.Server
	http   *http.Server
	served chan error
	micro  micro.Service
}

// StartNode starts a whole node; Close stops it.
func StartNode(ctx context.Context, o NodeOptions) (*Node, error) {
	n := &Node{Opts: o}
	if err := n.StartServer(ctx); err != nil {
		return nil, err
	}
	if err := n.StartService(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// StartServer starts the embedded JetStream server (recovering the streams
// in Dir) and provisions the stream and the bucket.
func (n *Node) StartServer(ctx context.Context) error {
	n.Config = jetstream.NewConfig()
	n.server = embedded.NewServer(n.Opts.Dir)
	n.server.ServerName, n.server.Port, n.server.SyncAlways = "bench", -1, n.Opts.SyncAlways
	if err := n.server.Start(ctx); err != nil {
		n.server = nil
		return fmt.Errorf("embedded server: %w", err)
	}
	n.NATSURL = n.server.ClientURL()
	var err error
	cc := jetstream.NewConnConfig(n.NATSURL)
	cc.Name = "pi-node bench"
	if n.Conn, err = jetstream.Connect(ctx, cc); err != nil {
		return err
	}
	sm, err := jetstream.ProvisionShards(ctx, n.Conn.JS, n.Config, max(n.Opts.Shards, 1))
	if err != nil {
		return err
	}
	n.Log = jetstream.NewLog(n.Conn.JS, n.Config)
	if n.Opts.Shards > 1 {
		n.ShardLogs, n.sharded = jetstream.NewShards(n.Conn.JS, n.Config, sm)
	}
	return nil
}

// StartService opens the Store (restoring its snapshot, if any) and serves
// the API over HTTP and NATS. It returns as soon as the node serves, which
// is before the Store has caught up with the log.
func (n *Node) StartService(ctx context.Context) error {
	cursors, err := jetstream.NewCursors(ctx, n.Conn.JS, n.Config)
	if err != nil {
		return err
	}
	var log session.Log = n.Log
	var stores []*store.Store
	sm := shard.OneMap(1)
	if len(n.ShardLogs) == 0 {
		so := store.Options{MemoryBudget: n.Opts.MemoryBudget, Log: n.Log, SnapshotEvery: n.Opts.SnapshotEvery}
		if n.Opts.SnapshotEvery > 0 {
			so.SnapshotDir = filepath.Join(n.Opts.Dir, "store")
		}
		stores = []*store.Store{store.New(n.Log, so)}
	} else {
		// As pi-node: a Store per shard, its own snapshots and share of
		// the budget.
		for k, l := range n.ShardLogs {
			so := store.Options{MemoryBudget: n.Opts.MemoryBudget / int64(len(n.ShardLogs)), Log: l, Writer: l, SnapshotEvery: n.Opts.SnapshotEvery}
			if n.Opts.SnapshotEvery > 0 {
				so.SnapshotDir = filepath.Join(n.Opts.Dir, fmt.Sprintf("store-%d", k))
			}
			stores = append(stores, store.New(l, so))
		}
		log, sm = n.sharded, n.sharded.Map()
	}
	if n.Stores, err = store.NewSet(sm, stores); err != nil {
		return err
	}
	n.Store = stores[0]
	for _, st := range stores {
		if err := st.Open(ctx); err != nil {
			return err
		}
	}
	n.Service = &service.Service{Log: log, Store: n.Stores, Cursors: cursors}
	if n.api, err = api.New(api.Config{Service: n.Service, NodeName: "bench"}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	n.HTTPURL = "http://" + ln.Addr().String()
	n.http = n.api.HTTPServer(ln.Addr().String())
	n.served = make(chan error, 1)
	go func() { n.served <- n.http.Serve(ln) }()
	if n.micro, err = n.api.StartNATS(n.Conn.NC); err != nil {
		return fmt.Errorf("start NATS micro service: %w", err)
	}
	return nil
}

// Close stops the node as pi-node does — the micro service, HTTP, the
// API, the Store (which writes its last snapshot), the connection, the
// server — and returns the first error, the snapshot's included.
func (n *Node) Close() error {
	err := n.StopService()
	if n.Conn != nil {
		n.Conn.Close()
	}
	if n.server != nil {
		n.server.Shutdown()
	}
	*n = Node{Opts: n.Opts}
	return err
}

// StopService is the first half of Close: it stops serving and closes the
// Store, leaving the server up (so that what the Store held can be told
// apart from what the server holds).
func (n *Node) StopService() error {
	var errs []error
	if n.micro != nil {
		errs = append(errs, n.micro.Stop())
		n.micro = nil
	}
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, n.http.Shutdown(ctx))
		cancel()
		if err := <-n.served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		n.http = nil
	}
	if n.api != nil {
		errs = append(errs, n.api.Close())
		n.api = nil
	}
	for _, st := range n.Stores.All() {
		errs = append(errs, st.Close())
	}
	n.Store, n.Stores, n.Service = nil, nil, nil
	return errors.Join(errs...)
}
