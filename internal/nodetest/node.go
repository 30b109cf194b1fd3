package nodetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
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

	server *embedded.Server
	conn   *jetstream.Conn
	api    *api.Server
	http   *http.Server
	served chan error
	micro  micro.Service
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
// testing.T); Close stops it.
func StartDir(ctx context.Context, dir string, o Options) (n *Node, err error) {
	n = &Node{Token: o.Token, Config: jetstream.NewConfig()}
	if o.MaxBatch > 0 {
		n.Config.MaxBatch = o.MaxBatch
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	n.server = embedded.NewServer(dir)
	// No fsync per write (pi-node's default is one): durability is not
	// what these tests check.
	n.server.ServerName, n.server.Port, n.server.SyncAlways = "apitest", -1, false
	if o.MaxPayload > 0 {
		n.server.MaxPayload = o.MaxPayload
	}
	if err := n.server.Start(ctx); err != nil {
		return nil, err
	}
	n.NATSURL = n.server.ClientURL()
	if n.conn, err = jetstream.Connect(ctx, jetstream.NewConnConfig(n.NATSURL)); err != nil {
		return nil, err
	}
	shards := max(o.Shards, 1)
	sm, err := jetstream.ProvisionShards(ctx, n.conn.JS, n.Config, shards)
	if err != nil {
		return nil, err
	}
	n.Log = jetstream.NewLog(n.conn.JS, n.Config)
	if n.Cursors, err = jetstream.NewCursors(ctx, n.conn.JS, n.Config); err != nil {
		return nil, err
	}
	var log session.Log = n.Log
	var stores []*store.Store
	if shards == 1 {
		stores = []*store.Store{store.New(n.Log, store.Options{Log: n.Log})}
	} else {
		var logs []*shard.Log
		logs, n.Sharded = jetstream.NewShards(n.conn.JS, n.Config, sm)
		for _, l := range logs {
			stores = append(stores, store.New(l, store.Options{Log: l, Writer: l}))
		}
		log = n.Sharded
	}
	if n.Stores, err = store.NewSet(sm, stores); err != nil {
		return nil, err
	}
	n.Store = stores[0]
	for _, st := range stores {
		if err := st.Open(ctx); err != nil {
			return nil, err
		}
	}
	svc := &service.Service{Log: log, Store: n.Stores, Cursors: n.Cursors}
	if n.api, err = api.New(api.Config{Service: svc, NodeName: "apitest", Token: o.Token}); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("http listen: %w", err)
	}
	n.HTTPURL = "http://" + ln.Addr().String()
	n.http = n.api.HTTPServer(ln.Addr().String())
	n.served = make(chan error, 1)
	go func() { n.served <- n.http.Serve(ln) }()
	if n.micro, err = n.api.StartNATS(n.conn.NC); err != nil {
		return nil, err
	}
	return n, nil
}

// Close stops the node as pi-node does: the micro service, the HTTP
// server, the API, the Store, the connection, the server. It is safe to
// call on a node that failed to start.
func (n *Node) Close() {
	if n.micro != nil {
		_ = n.micro.Stop()
	}
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = n.http.Shutdown(ctx)
		cancel()
		<-n.served // http.ErrServerClosed
	}
	if n.api != nil {
		_ = n.api.Close()
	}
	for _, st := range n.Stores.All() {
		_ = st.Close()
	}
	if n.conn != nil {
		n.conn.Close()
	}
	if n.server != nil {
		n.server.Shutdown()
	}
}
