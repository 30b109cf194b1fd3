package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/node"
	"github.com/pifleet/sessionlog/internal/service"
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

// Node is pi-node in this process, opened by internal/node as cmd/pi-node
// opens one — the stream and bucket provisioned, the Stores following the
// log, the Service, the HTTP API and the NATS micro service — on an
// embedded JetStream server of its own, so that the raw baselines run on
// the very server the node uses, and the Stores' memory can be read from
// the Go heap. Start it in two steps (StartServer, then StartService) to
// time them apart.
type Node struct {
	Opts    NodeOptions
	NATSURL string // the embedded server's client URL
	HTTPURL string // http://127.0.0.1:PORT
	Config  jetstream.Config
	Conn    *jetstream.Conn // the benchmark's own connection, for the raw baselines and the loads
	Log     *jetstream.Log  // shard 0's
	Store   *store.Store    // shard 0's
	Service *service.Service
	// With Shards above 1: every shard's log; Stores is every shard's Store.
	ShardLogs []*shard.Log
	Stores    *store.Set

	server *embedded.Server
	node   *node.Node
	stop   context.CancelFunc // ends the node's background work, after its Close
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
		n.ShardLogs, _ = jetstream.NewShards(n.Conn.JS, n.Config, sm)
	}
	return nil
}

// StartService opens the node on the server (its Stores restoring their
// snapshots, if any), serving the API over HTTP and NATS. It returns as
// soon as the node serves, which is before the Stores have caught up with
// the log.
func (n *Node) StartService(ctx context.Context) error {
	c := node.DefaultConfig()
	c.Server, c.DataDir, c.NodeName, c.HTTPListen = n.server, n.Opts.Dir, "bench", "127.0.0.1:0"
	c.MemoryBudget, c.SnapshotInterval, c.Shards = n.Opts.MemoryBudget, n.Opts.SnapshotEvery, n.Opts.Shards
	c.GoMemoryLimit = "0" // the benchmark process's, not the node's to set
	c.LogLevel = "warn"
	// The node's background work lives until StopService, not as long
	// as ctx.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	started := context.AfterFunc(ctx, stop)
	nd, err := node.Open(life, c)
	started()
	if err != nil {
		stop()
		return err
	}
	n.node, n.stop = nd, stop
	n.HTTPURL = "http://" + nd.HTTPAddr
	n.Service, n.Stores = nd.Service(), nd.Stores()
	n.Store = n.Stores.All()[0]
	return nil
}

// Close stops the node as pi-node does — the micro service, HTTP, the
// API, the Stores (which write their last snapshots), the connection, the
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

// StopService is the first half of Close: it closes the node (its
// connection included), leaving the server up (so that what the Stores
// held can be told apart from what the server holds).
func (n *Node) StopService() error {
	if n.node == nil {
		return nil
	}
	err := n.node.Close(context.Background())
	n.stop()
	n.node, n.stop = nil, nil
	n.Store, n.Stores, n.Service = nil, nil, nil
	return err
}
