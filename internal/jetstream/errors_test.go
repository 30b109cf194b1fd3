package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

func TestTranslate(t *testing.T) {
	api := func(code jetstream.ErrorCode) error {
		return fmt.Errorf("nats: %w", &jetstream.APIError{Code: 400, ErrorCode: code, Description: "test"})
	}
	for _, tc := range []struct {
		err, conflict, want error
	}{
		{api(10071), wire.ErrConflict, wire.ErrConflict},
		{api(10164), wire.ErrConflict, wire.ErrConflict},
		{api(10071), wire.ErrExists, wire.ErrExists},
		{api(10164), wire.ErrExists, wire.ErrExists},
		{api(10201), wire.ErrConflict, wire.ErrConflict},
		{api(10158), wire.ErrConflict, wire.ErrConflict},
		{api(10054), wire.ErrConflict, wire.ErrTooLarge},
		{api(10199), wire.ErrConflict, wire.ErrTooLarge},
		{api(10037), wire.ErrConflict, wire.ErrNotFound},
		{api(10059), wire.ErrConflict, wire.ErrNotFound},
		{jetstream.ErrMsgNotFound, wire.ErrConflict, wire.ErrNotFound},
		{jetstream.ErrKeyNotFound, wire.ErrConflict, wire.ErrNotFound},
		{api(10008), wire.ErrConflict, wire.ErrUnavailable},
		{api(10005), wire.ErrConflict, wire.ErrUnavailable},
		{api(10176), wire.ErrConflict, wire.ErrUnavailable},
		{nats.ErrMaxPayload, wire.ErrConflict, wire.ErrTooLarge},
		{nats.ErrNoResponders, wire.ErrConflict, wire.ErrUnavailable},
		{jetstream.ErrNoStreamResponse, wire.ErrConflict, wire.ErrUnavailable},
		{nats.ErrTimeout, wire.ErrConflict, wire.ErrUnavailable},
		{context.DeadlineExceeded, wire.ErrConflict, wire.ErrUnavailable},
		{nats.ErrConnectionClosed, wire.ErrConflict, wire.ErrUnavailable},
	} {
		got := translate(tc.err, tc.conflict)
		if !errors.Is(got, tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("translate(%v): %v, want %v wrapping the original", tc.err, got, tc.want)
		}
		// The message reaches API clients: ours, without nats.go's text.
		if msg := got.Error(); strings.Contains(msg, "nats:") || strings.Contains(msg, "err_code") || !strings.HasPrefix(msg, tc.want.Error()+": ") {
			t.Errorf("translate(%v) says %q", tc.err, msg)
		}
	}
	plain := errors.New("something else")
	if got := translate(plain, wire.ErrConflict); got != plain {
		t.Errorf("translate of an unknown error: %v, want it unchanged", got)
	}
	if got := translate(api(10174), wire.ErrConflict); errors.Is(got, wire.ErrUnavailable) || errors.Is(got, wire.ErrConflict) {
		t.Errorf("atomic publish disabled translated to %v: a misconfiguration is not retryable", got)
	}
}

// testServerTooLarge checks size limits end to end, nothing being stored
// after a refusal: the server's max_msg_size for a record the Log believes
// fits (a stream provisioned smaller than the Log's Config: JetStream error
// 10054), the connection's max payload (which the Log checks before
// publishing, also in the middle of a batch), and the Log's own check, which
// counts headers too and is close to the server's.
func testServerTooLarge(t *testing.T, conn *Conn, replicas int) {
	cfg := testConfig(replicas)
	cfg.MaxMsgSize = 4096
	provision(t, conn.JS, cfg)
	loose := cfg
	loose.MaxMsgSize = 64 << 20
	ctx := context.Background()
	fits := func(n int) session.Record {
		return session.Record{Type: "message", ID: "0000fff0", Data: make([]byte, n)}
	}

	for _, tc := range []struct {
		name  string
		log   *Log
		rec   session.Record
		batch bool // also try the record in the middle of a batch
	}{
		{"over the stream's max_msg_size", NewLog(conn.JS, loose), fits(8192), false},
		{"over the max payload", NewLog(conn.JS, loose), fits(9 << 20), true},
		{"over max_msg_size with its headers", NewLog(conn.JS, cfg), fits(4096 - 10), true},
	} {
		l := tc.log
		sid := testutil.SessionID(t)
		if tc.batch {
			_, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid), tc.rec, entryRecs("aa", 1)[0]})
			if !errors.Is(err, wire.ErrTooLarge) {
				t.Fatalf("batch with a record %s: %v, want ErrTooLarge", tc.name, err)
			}
		}
		seqs, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
		if err != nil {
			t.Fatalf("%s: create: %v", tc.name, err)
		}
		_, err = l.Append(ctx, sid, seqs[0], []session.Record{tc.rec})
		if !errors.Is(err, wire.ErrTooLarge) {
			t.Fatalf("single record %s: %v, want ErrTooLarge", tc.name, err)
		}
		got, err := l.Read(ctx, sid, 0)
		if err != nil || len(got) != 1 || got[0].Seq != seqs[0] {
			t.Fatalf("%s: read after refused appends: %v, %v; want only the header", tc.name, got, err)
		}
	}
	// The largest record the Log lets through is stored.
	l := NewLog(conn.JS, cfg)
	sid := testutil.SessionID(t)
	for n := 4096 - 200; ; n-- {
		// In the middle of a batch: a record the check lets through but the
		// server refuses would fail the batch as incomplete (ErrUnavailable).
		_, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid), fits(n), entryRecs("ab", 1)[0]})
		if err == nil {
			if n < 4096-600 {
				t.Fatalf("largest record accepted under a 4096-byte limit: %d bytes; header accounting is far off", n)
			}
			break
		}
		if !errors.Is(err, wire.ErrTooLarge) {
			t.Fatalf("record of %d bytes: %v", n, err)
		}
	}
}

// TestStoppedServer checks that every operation fails with ErrUnavailable,
// within its context's bound, once the server is gone.
func TestStoppedServer(t *testing.T) {
	s := runServer(t)
	conn := connect(t, s.ClientURL())
	cfg := testConfig(1)
	ctx := context.Background()
	if err := Provision(ctx, conn.JS, cfg); err != nil { // no cleanup: the server goes away
		t.Fatal(err)
	}
	l := NewLog(conn.JS, cfg)
	sid := testutil.SessionID(t)
	seqs, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
	if err != nil {
		t.Fatal(err)
	}
	cursors, err := NewCursors(ctx, conn.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()

	for name, op := range map[string]func(context.Context) error{
		"append": func(ctx context.Context) error {
			_, err := l.Append(ctx, sid, seqs[0], entryRecs("bb", 1))
			return err
		},
		"batch": func(ctx context.Context) error {
			_, err := l.Append(ctx, sid, seqs[0], entryRecs("cc", 3))
			return err
		},
		"read":     func(ctx context.Context) error { _, err := l.Read(ctx, sid, 0); return err },
		"purge":    func(ctx context.Context) error { return l.Purge(ctx, sid) },
		"last seq": func(ctx context.Context) error { _, err := l.LastSeq(ctx); return err },
		"cursor get": func(ctx context.Context) error {
			_, err := cursors.Get(ctx, sid, "alice")
			return err
		},
		"cursor put": func(ctx context.Context) error {
			_, err := cursors.Put(ctx, sid, "alice", session.Cursor{})
			return err
		},
	} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		err := op(ctx)
		cancel()
		if !errors.Is(err, wire.ErrUnavailable) {
			t.Errorf("%s on a stopped server: %v, want ErrUnavailable", name, err)
		}
		if d := time.Since(start); d > testutil.Scale(3*time.Second) {
			t.Errorf("%s on a stopped server took %v", name, d)
		}
	}
}
