package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// stallingLog is a MemLog whose Append, once stall is set, blocks until
// its context ends and then lingers past goleak's retries (about half a
// second), as a publish in flight to a leader being elected does: a
// request handler that Close cancels but does not wait for is then still
// there when the test looks.
type stallingLog struct {
	*session.MemLog
	stall   atomic.Bool
	entered chan struct{}
}

func (l *stallingLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	if !l.stall.Load() {
		return l.MemLog.Append(ctx, sid, expect, recs)
	}
	l.entered <- struct{}{}
	<-ctx.Done()
	<-time.After(time.Second)
	return nil, ctx.Err()
}

// TestServerCloseJoinsGoroutines serves a watch stream over HTTP and a
// request over the NATS micro service, one of them stuck in the log; after
// Close and the shutdown of everything the test started, no goroutine may
// be left.
func TestServerCloseJoinsGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent() // other tests' leftovers are not this test's

	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }() // only if the test fails before the end
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}

	l := &stallingLog{MemLog: session.NewMemLog(1000, maxRecord), entered: make(chan struct{}, 1)}
	st := store.New(l, store.Options{Log: l})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := api.New(api.Config{
		Service:  &service.Service{Log: l, Store: st, Cursors: session.NewMemCursors()},
		NodeName: "n1", Heartbeat: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(apispec.Middleware(t, srv.Handler()))
	defer hs.Close()
	srvConn, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer srvConn.Close()
	if _, err := srv.StartNATS(srvConn); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	var c writeResult
	reqOK(t, nc, "create", `{"entries":[`+userMsg("u1", "q")+`,`+assistantMsg("a")+`]}`, &c)

	// A watch stream, read up to its first entry.
	resp, err := hs.Client().Get(fmt.Sprintf("%s/v1/sessions/%s/watch?minSeq=%d", hs.URL, c.SessionID, c.LastSeq))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: entry") {
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}

	// A NATS request whose append is stuck in the log.
	l.stall.Store(true)
	replied := make(chan struct{})
	go func() {
		defer close(replied)
		_, _ = nc.Request("pi.v1.append", fmt.Appendf(nil, `{"sessionId":%q,"entries":[%s]}`, c.SessionID, userMsg("u2", "more")), 10*time.Second)
	}()
	<-l.entered

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	// Close ended the stream: the read finishes.
	for sc.Scan() {
	}
	resp.Body.Close()
	// Closing the requester's connection ends its wait without the reply,
	// so that only Close can have waited for the handler.
	nc.Close()
	<-replied
	hs.Close()
	srvConn.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ns.Shutdown()
	ns.WaitForShutdown()
	goleak.VerifyNone(t, before)
}
