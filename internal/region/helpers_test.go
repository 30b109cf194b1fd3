package region

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// The integration tests run a supercluster in this process: one
// single-node region per name, joined by gateways, each server on fixed
// ports and its own data directory, so that it can be stopped and started
// again as a lost and returning region.

// site is one region's server.
type site struct {
	name          string
	dir           string
	client, route int
	gateway       int
	srv           *embedded.Server
}

type supercluster struct {
	sites map[string]*site
	gws   map[string][]*url.URL
}

// startSupercluster starts one server per region name, all at once (the
// meta group needs a majority of them), and stops them at cleanup.
func startSupercluster(t *testing.T, names ...string) *supercluster {
	t.Helper()
	sc := &supercluster{sites: map[string]*site{}, gws: map[string][]*url.URL{}}
	for _, n := range names {
		s := &site{name: n, dir: t.TempDir(), client: testutil.FreePort(t), route: testutil.FreePort(t), gateway: testutil.FreePort(t)}
		sc.sites[n] = s
		sc.gws[n] = []*url.URL{{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", s.gateway)}}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Go(func() { errs[i] = sc.startErr(n) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range sc.sites {
			if s.srv != nil {
				s.srv.Shutdown()
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return sc
}

func (sc *supercluster) startErr(name string) error {
	s := sc.sites[name]
	srv := embedded.NewServer(s.dir)
	srv.ServerName, srv.Host, srv.Port = name, "127.0.0.1", s.client
	srv.SyncAlways = false // tests: the loss is simulated by a clean shutdown
	srv.ClusterName, srv.ClusterListen = name, fmt.Sprintf("127.0.0.1:%d", s.route)
	srv.Routes = []*url.URL{{Scheme: "nats-route", Host: srv.ClusterListen}}
	srv.GatewayName, srv.GatewayListen, srv.Gateways = name, fmt.Sprintf("127.0.0.1:%d", s.gateway), sc.gws
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	s.srv = srv
	return nil
}

// start starts a stopped region's server again, on its data.
func (sc *supercluster) start(t *testing.T, name string) {
	t.Helper()
	if err := sc.startErr(name); err != nil {
		t.Fatal(err)
	}
}

// stop shuts a region's server down: the region is lost until start.
func (sc *supercluster) stop(name string) {
	s := sc.sites[name]
	s.srv.Shutdown()
	s.srv = nil
}

func (sc *supercluster) url(name string) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", sc.sites[name].client)
}

// connect opens a connection to a region's server that reconnects by
// itself across the server's restarts.
func (sc *supercluster) connect(t *testing.T, name string) *jetstream.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc := jetstream.NewConnConfig(sc.url(name))
	cc.APITimeout, cc.ReconnectWait = 3*time.Second, 100*time.Millisecond
	c, err := jetstream.Connect(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// stack is one pi-node's engine in a region: the Node, a Store on its
// Feed, a Service on its Log and Cursors.
type stack struct {
	node  *Node
	store *store.Store // shard 0's
	set   *store.Set   // every shard's
	svc   *service.Service
}

func testBase() jetstream.Config {
	cfg := jetstream.NewConfig()
	cfg.Duplicates = time.Minute
	return cfg
}

// startTwoRegions starts main regions A (the home) and B and the
// tie-breaker T, with one node's stack in each main region.
func startTwoRegions(t *testing.T) (*supercluster, *stack, *stack) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-region supercluster")
	}
	sc := startSupercluster(t, "A", "B", "T")
	return sc, openStack(t, sc, "A", "A"), openStack(t, sc, "B", "A")
}

func openStack(t *testing.T, sc *supercluster, region, home string) *stack {
	t.Helper()
	return openShardedStack(t, sc, region, home, 0)
}

// openShardedStack is openStack of a node started with --shards shards
// (0: the record's), a Store per shard as pi-node has.
func openShardedStack(t *testing.T, sc *supercluster, region, home string, shards int) *stack {
	t.Helper()
	c := sc.connect(t, region)
	n := &Node{JS: c.JS, Base: testBase(), Region: region, HomeRegion: home, RecordCluster: "T", Shards: shards}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Open(ctx); err != nil {
		t.Fatalf("open node in %s: %v", region, err)
	}
	var stores []*store.Store
	for k, f := range n.Feeds {
		st := store.New(n.StoreFeed(k), store.Options{Log: n.StoreFeed(k)})
		f.SetReset(st.Reset)
		if err := st.Open(ctx); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
	}
	t.Cleanup(func() {
		for _, st := range stores {
			_ = st.Close()
		}
		n.Close()
	})
	set, err := store.NewSet(n.ShardMap(), stores)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{node: n, store: stores[0], set: set, svc: &service.Service{Log: n.WriteLog(), ReadLog: n.ReadLog(), Store: set, Cursors: n.Cursors,
		Retry: writer.RetryPolicy{AttemptTimeout: time.Second, UnavailableFor: 3 * time.Second}}}
}

func rawEntry(id, parent string) json.RawMessage {
	e := map[string]any{"type": "message", "id": id, "parentId": nil, "timestamp": "2026-11-30T10:00:00.000Z",
		"message": map[string]any{"role": "user", "content": "entry " + id}}
	if parent != "" {
		e["parentId"] = parent
	}
	b, _ := json.Marshal(e)
	return b
}

func rawHeader(sid string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": sid, "cwd": "/w", "timestamp": "2026-11-30T10:00:00.000Z"})
	return b
}

// create creates session sid with a root entry.
func (s *stack) create(t *testing.T, sid, root string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.svc.Create(ctx, wire.CreateRequest{Header: rawHeader(sid), Entries: []json.RawMessage{rawEntry(root, "")}}); err != nil {
		t.Fatalf("create %s: %v", sid, err)
	}
}

// add appends one entry, retrying while the log is unavailable (a
// region switching); it returns the entry's sequence.
func (s *stack) add(t *testing.T, sid, id, parent string) uint64 {
	t.Helper()
	var seq uint64
	testutil.WaitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := s.svc.Append(ctx, sid, wire.AppendRequest{Entries: []json.RawMessage{rawEntry(id, parent)}})
		if err != nil {
			return fmt.Errorf("append %s to %s: %w", id, sid, err)
		}
		seq = res.Entries[0].Seq
		return nil
	})
	return seq
}

// parents returns the session's entries in the Store as id -> parentId.
func (s *stack) parents(sid string) map[string]string {
	out := map[string]string{}
	err := s.set.For(sid).View(context.Background(), sid, func(d *store.Doc) error {
		for i := range d.Tree.Len() {
			e := d.Tree.Entry(i)
			out[e.ID] = e.ParentID
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return out
}

// waitEntries waits until the Store holds exactly want (id -> parent).
func (s *stack) waitEntries(t *testing.T, sid string, want map[string]string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, func() error {
		if got := s.parents(sid); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("session %s in %s: %v, want %v", sid, s.node.Region, got, want)
		}
		return nil
	})
}

// waitRecord waits until the node is wired by a record that satisfies ok.
func (s *stack) waitRecord(t *testing.T, what string, ok func(Record) bool) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, func() error {
		if r := s.node.Record(); !ok(r) {
			return fmt.Errorf("node in %s: %s: record %+v", s.node.Region, what, r)
		}
		return nil
	})
}
