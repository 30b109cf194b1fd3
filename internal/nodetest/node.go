package nodetest

import (
	"context"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/node"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
)

// Options configure a Node. The zero value is a node without a token.
type Options struct {
	// Token is the HTTP bearer token the node requires ("" for none).
	Token string
	// MaxBatch is the node's atomic batch limit (0: the default), small to
	// make a session of a few records span several batches.
	MaxBatch int
	// MaxPayload is the embedded NATS server's max_payload (0: pi-node's
	// 8 MiB), small to make a request too large for NATS.
	MaxPayload int32
	// Shards spreads the sessions over that many streams (0 or 1: one),
	// as pi-node's --shards does.
	Shards int
}

// Node is a running in-process pi-node.
type Node struct {
	HTTPURL string // http://127.0.0.1:PORT
	NATSURL string // the embedded NATS server's client URL
	Token   string

	// The engine underneath, for checks that bypass the API: Log reads the
	// stream directly (it is also a session.Feed).
	Log     *jetstream.Log
	Cursors *jetstream.Cursors
	Store   *store.Store
	Config  jetstream.Config
	// With Options.Shards above 1: Log and Store are shard 0's, Stores
	// every shard's, and Sharded the log over all of them.
	Stores  *store.Set
	Sharded *shard.Sharded

	node *node.Node
	stop context.CancelFunc // ends the node's background work, after Close
}

// Start starts a node with its data in t.TempDir() and stops it at cleanup.
func Start(t testing.TB, o Options) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := StartDir(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatalf("start pi-node: %v", err)
	}
	t.Cleanup(n.Close)
	return n
}

// StartDir starts a node with its data in dir (for TestMain, which has no
// testing.T); ctx bounds the start, and Close stops the node.
func StartDir(ctx context.Context, dir string, o Options) (*Node, error) {
	c := node.DefaultConfig()
	c.DataDir, c.NodeName, c.HTTPToken = dir, "apitest", o.Token
	c.ClientListen, c.HTTPListen = "127.0.0.1:0", "127.0.0.1:0"
	// No fsync per write (pi-node's default is one): durability is not
	// what these tests check.
	c.Sync = "interval"
	c.SnapshotInterval = 0
	c.GoMemoryLimit = "0" // the test process's, not the node's to set
	c.LogLevel = "warn"
	c.MaxBatch, c.MaxPayload, c.Shards = o.MaxBatch, o.MaxPayload, o.Shards
	// The node's background work lives until Close, not as long as ctx.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	started := context.AfterFunc(ctx, stop)
	nd, err := node.Open(life, c)
	started()
	if err != nil {
		stop()
		return nil, err
	}
	n := &Node{HTTPURL: "http://" + nd.HTTPAddr, NATSURL: nd.NATSURL, Token: o.Token, node: nd, stop: stop,
		Config: nd.JetStreamConfig(), Stores: nd.Stores()}
	n.Log = jetstream.NewLog(nd.Conn().JS, n.Config)
	n.Store = n.Stores.All()[0]
	if o.Shards > 1 {
		n.Sharded = nd.Sharded()
	}
	if n.Cursors, err = jetstream.NewCursors(ctx, nd.Conn().JS, n.Config); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Close stops the node as pi-node does (node.Node.Close).
func (n *Node) Close() {
	_ = n.node.Close(context.Background())
	n.stop()
}
