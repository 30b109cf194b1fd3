package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestFollowPastAConsumerRecreatingItself: when the ordered consumer is
// recreating itself and its requests go unanswered (the meta leader is being
// elected), Follow still delivers what the log gets meanwhile, by leader gets,
// without waiting for the consumer. nats.go's ordered consumer holds its lock
// for a whole attempt to recreate itself (10 s unanswered), and stopping it
// waits for that lock: a Follow that waited for the stop sat still that long
// (a survivor's Store 10 s behind after a node's SIGTERM, docs/TESTING.md's
// ledger). Here the consumer creations are dropped on the wire, and the
// order is checked, not a time: the write must be applied before the stop of
// the stuck consumer got through (its delete request, sent once the lock is
// free).
func TestFollowPastAConsumerRecreatingItself(t *testing.T) {
	s := runServer(t)
	drop := &dropDialer{prefix: []byte("$JS.API.CONSUMER.CREATE."), watch: []byte("$JS.API.CONSUMER.DELETE.")}
	conn := drop.connect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := connect(t, s.ClientURL())
	cfg := testConfig(1)
	provision(t, admin.JS, cfg)
	l := NewLog(conn.JS, cfg)
	sid := testutil.SessionID(t)
	seqs, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var applied uint64
	deletesAt := map[uint64]int64{} // the consumer deletes sent when each record was applied
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(fctx, 1, func(recs []session.Stored) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				if r.Seq != applied+1 && applied != 0 {
					return fmt.Errorf("delivered seq %d after %d", r.Seq, applied)
				}
				applied = r.Seq
				deletesAt[r.Seq] = drop.watched.Load()
			}
			return nil
		})
	}()
	defer func() {
		stop()
		<-done
	}()
	appliedThrough := func(seq uint64) {
		t.Helper()
		testutil.WaitFor(t, testutil.Scale(30*time.Second), func() error {
			select {
			case err := <-done:
				t.Fatalf("follow ended: %v", err)
			default:
			}
			mu.Lock()
			defer mu.Unlock()
			if applied < seq {
				return fmt.Errorf("applied through %d, want %d", applied, seq)
			}
			return nil
		})
	}
	appliedThrough(seqs[0])

	// From now on no consumer can be made. Deleting the server-side
	// consumer sets the ordered consumer recreating itself; once its first
	// request is on the wire (and dropped) it holds its lock.
	drop.block.Store(true)
	st, err := admin.JS.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		if err := admin.JS.DeleteConsumer(ctx, cfg.Stream, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	// The recreation deletes the old consumer too, at its start.
	testutil.WaitFor(t, testutil.Scale(30*time.Second), func() error {
		if drop.dropped.Load() == 0 || drop.watched.Load() == 0 {
			return fmt.Errorf("the ordered consumer has not tried to recreate itself")
		}
		return nil
	})
	base := drop.watched.Load()

	last := seqs[0]
	for i := range 2 {
		got, err := l.Append(ctx, sid, last, entryRecs(fmt.Sprintf("r%d", i), 1))
		if err != nil {
			t.Fatal(err)
		}
		last = got[0]
		appliedThrough(last)
		mu.Lock()
		n := deletesAt[last]
		mu.Unlock()
		if i == 0 && n > base {
			t.Fatalf("seq %d was applied only after the stuck consumer's stop got through (its delete request sent): Follow waited for it", last)
		}
	}
	t.Logf("applied through %d; consumer creations dropped: %d", last, drop.dropped.Load())
	drop.block.Store(false) // let the abandoned consumer's recreation end
}

// dropDialer dials TCP and, while block is set, drops the client's
// publishes whose subject starts with prefix: requests that the server never
// sees, and so never answers. It counts those that start with watch.
type dropDialer struct {
	prefix, watch []byte
	block         atomic.Bool
	dropped       atomic.Int64
	watched       atomic.Int64
}

// connect is the test's connection to url through d, closed at cleanup.
func (d *dropDialer) connect(t *testing.T, url string) *Conn {
	t.Helper()
	cfg := NewConnConfig(url)
	cfg.Options = []nats.Option{nats.SetCustomDialer(d)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func (d *dropDialer) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c, d: d}, nil
}

// dropConn parses what the client writes into whole protocol operations
// (a line, and for PUB and HPUB the payload whose size ends the line) and
// passes on all but the dropped publishes.
type dropConn struct {
	net.Conn
	d       *dropDialer
	mu      sync.Mutex
	pending []byte
}

func (c *dropConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p...)
	var out []byte
	for {
		eol := bytes.Index(c.pending, []byte("\r\n"))
		if eol < 0 {
			break
		}
		op := c.pending[:eol+2]
		args := bytes.Fields(c.pending[:eol])
		drop := false
		if len(args) >= 3 && (bytes.EqualFold(args[0], []byte("PUB")) || bytes.EqualFold(args[0], []byte("HPUB"))) {
			size, err := strconv.Atoi(string(args[len(args)-1]))
			if err != nil {
				return 0, fmt.Errorf("dropConn: %q: %w", c.pending[:eol], err)
			}
			if len(c.pending) < eol+2+size+2 {
				break // the payload is still to come
			}
			op = c.pending[:eol+2+size+2]
			drop = c.d.block.Load() && bytes.HasPrefix(args[1], c.d.prefix)
			if bytes.HasPrefix(args[1], c.d.watch) {
				c.d.watched.Add(1)
			}
		}
		if drop {
			c.d.dropped.Add(1)
		} else {
			out = append(out, op...)
		}
		c.pending = c.pending[len(op):]
	}
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// TestLeaseWithoutDirectGets: the archiver's lease is read from the lease
// bucket's stream leader, never by a direct get (kv.Get), which a replica
// behind the leader may answer and which nobody answers for a moment after
// the bucket is created: a pass right after a cluster's start failed on
// "no responders" (TestClusterArchiveAndRestore, docs/TESTING.md's
// ledger). Here every direct get is dropped on the wire.
func TestLeaseWithoutDirectGets(t *testing.T) {
	s := runServer(t)
	drop := &dropDialer{prefix: []byte("$JS.API.DIRECT.GET.")}
	drop.block.Store(true)
	conn := drop.connect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Scale(time.Minute))
	defer cancel()
	cfg := testConfig(1)
	provision(t, conn.JS, cfg)
	acfg := NewArchiveConfig(cfg)
	acfg.SetStream(cfg.Stream + "_ARCHIVE")
	a := NewArchive(NewLog(conn.JS, cfg), acfg)
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	// Each step answers within a request's default timeout or not at all.
	step := func(what string, fn func(context.Context) error) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, testutil.Scale(10*time.Second))
		defer cancel()
		if err := fn(sctx); err != nil {
			t.Fatalf("%s: %v (direct gets dropped: %d)", what, err, drop.dropped.Load())
		}
	}
	holds := func(holder, want string) func(context.Context) error {
		return func(ctx context.Context) error {
			l, err := a.Lease(ctx, holder, time.Minute)
			if err == nil && l.Holder != want {
				err = fmt.Errorf("lease held by %q, want %q", l.Holder, want)
			}
			return err
		}
	}
	step("n1 takes the free lease", holds("n1", "n1"))
	step("n2 finds n1 holding it", holds("n2", "n1"))
	step("n1 renews it", holds("n1", "n1"))
	step("n2 gives up a lease it does not hold", func(ctx context.Context) error { return a.Unlease(ctx, "n2") })
	step("n2 still finds n1 holding it", holds("n2", "n1"))
	step("n1 gives it up", func(ctx context.Context) error { return a.Unlease(ctx, "n1") })
	step("n2 takes it after the delete", holds("n2", "n2"))
}

// TestAppendRetriesUnheard: a publish that no server took stored nothing,
// and goes again: a stream just created is not heard on every server of a
// cluster at once (an append right after provisioning got "no responders"
// in TestClusterR3, docs/TESTING.md's ledger). Against a subject no stream
// holds, an append of one record and one of a batch are each sent
// noResponderRetries times, then reported unavailable.
func TestAppendRetriesUnheard(t *testing.T) {
	s := runServer(t)
	cfg := testConfig(1) // not provisioned: nobody hears its subjects
	drop := &dropDialer{watch: []byte(cfg.SubjectPrefix + ".")}
	conn := drop.connect(t, s.ClientURL())
	l := NewLog(conn.JS, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Scale(time.Minute))
	defer cancel()
	sid := testutil.SessionID(t)
	for _, recs := range [][]session.Record{entryRecs("one", 1), append([]session.Record{headerRec(sid)}, entryRecs("batch", 2)...)} {
		before := drop.watched.Load()
		_, err := l.Append(ctx, sid, 0, recs)
		if !errors.Is(err, wire.ErrUnavailable) {
			t.Fatalf("append of %d records to a subject nobody hears: %v, want unavailable", len(recs), err)
		}
		// A batch is sent up to its first message, whose ack nobody gives.
		if sent := drop.watched.Load() - before; sent != noResponderRetries {
			t.Errorf("append of %d records sent %d times, want %d", len(recs), sent, noResponderRetries)
		}
	}
}
