package jetstream

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/testutil"
)

func testProvisionIdempotent(t *testing.T, conn *Conn, replicas int) {
	cfg := testConfig(replicas)
	provision(t, conn.JS, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = Provision(ctx, conn.JS, cfg) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("provision again: %v", err)
		}
	}
	s, err := conn.JS.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	got := s.CachedInfo().Config
	if !got.AllowAtomicPublish || got.AllowDirect || got.Replicas != replicas ||
		got.Storage != jetstream.FileStorage || got.Duplicates != 2*time.Minute || got.MaxMsgSize != 8<<20 ||
		len(got.Subjects) != 1 || got.Subjects[0] != cfg.SubjectPrefix+".*" {
		t.Fatalf("provisioned stream: %+v", got)
	}
}

// TestProvisionRefusesIncompatible creates assets by hand that break the wire
// contract and checks that Provision names the field and both values.
func TestProvisionRefusesIncompatible(t *testing.T) {
	s := runServer(t)
	conn := connect(t, s.ClientURL())
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		change func(*jetstream.StreamConfig)
		want   string
	}{
		{"no atomic publish", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = false }, "allow_atomic is false, want true"},
		{"direct gets", func(c *jetstream.StreamConfig) { c.AllowDirect = true }, "allow_direct is true, want false"},
		{"memory", func(c *jetstream.StreamConfig) { c.Storage = jetstream.MemoryStorage }, "storage is Memory, want File"},
		{"subject limit", func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 10 }, "max_msgs_per_subject is 10, want -1"},
		{"subjects", func(c *jetstream.StreamConfig) { c.Subjects = []string{"other.*"} }, "subjects is other.*, want "},
	} {
		cfg := testConfig(1)
		sc := cfg.streamConfig()
		tc.change(&sc)
		if _, err := conn.JS.CreateStream(ctx, sc); err != nil {
			t.Fatalf("%s: create by hand: %v", tc.name, err)
		}
		err := Provision(ctx, conn.JS, cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), cfg.Stream) {
			t.Fatalf("%s: provision: %v, want an error naming %s and %q", tc.name, err, cfg.Stream, tc.want)
		}
		if err := conn.JS.DeleteStream(ctx, cfg.Stream); err != nil {
			t.Fatal(err)
		}
	}

	cfg := testConfig(1)
	if _, err := conn.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.Bucket, History: 5}); err != nil {
		t.Fatal(err)
	}
	err := Provision(ctx, conn.JS, cfg)
	if err == nil || !strings.Contains(err.Error(), "history is 5, want 1") || !strings.Contains(err.Error(), cfg.Bucket) {
		t.Fatalf("provision over a bucket with history 5: %v", err)
	}
}

// testProvisionWaits stops two of the three servers, so the cluster has no
// meta leader, and checks that Provision waits (logging why) instead of
// failing, and completes once a quorum is back.
func testProvisionWaits(t *testing.T, servers []*embedded.Server) {
	conn := connect(t, servers[0].ClientURL())
	servers[1].Shutdown()
	servers[2].Shutdown()

	var mu sync.Mutex
	var logs bytes.Buffer
	cfg := testConfig(3)
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{&mu, &logs}, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Provision(ctx, conn.JS, cfg) }()

	testutil.WaitFor(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "waiting for the JetStream cluster") {
			return context.DeadlineExceeded
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("provision without a meta leader returned %v", err)
	default:
	}

	restart := func(s *embedded.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Start(ctx); err != nil {
			t.Errorf("restart %s: %v", s.ServerName, err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { restart(servers[1]) })
	wg.Go(func() { restart(servers[2]) })
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatalf("provision after the quorum came back: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = conn.JS.DeleteStream(ctx, cfg.Stream)
		_ = conn.JS.DeleteKeyValue(ctx, cfg.Bucket)
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// unansweredOnce is a JetStream whose first KeyValue lookups get no reply,
// as on a node starting while the bucket's leader is elected or the
// machine is loaded.
type unansweredOnce struct {
	jetstream.JetStream
	misses int
}

func (u *unansweredOnce) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	if u.misses > 0 {
		u.misses--
		return nil, context.DeadlineExceeded
	}
	return u.JetStream.KeyValue(ctx, bucket)
}

// TestNewCursorsRetries: binding the cursor bucket outlasts unanswered
// lookups (pi-node exited at start with "cursors: bucket PI_CURSORS:
// unavailable: no reply from JetStream in time" in a CI run under load).
func TestNewCursorsRetries(t *testing.T) {
	conn := connect(t, runServer(t).ClientURL())
	cfg := testConfig(1)
	provision(t, conn.JS, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := &unansweredOnce{JetStream: conn.JS, misses: 2}
	c, err := NewCursors(ctx, js, cfg)
	if err != nil || c == nil {
		t.Fatalf("NewCursors after 2 unanswered lookups: %v", err)
	}
}
