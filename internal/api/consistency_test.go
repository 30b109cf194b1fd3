package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// gatedFeed is a MemLog's feed that delivers nothing while closed: a node
// whose Store has not applied a write yet — its own, acknowledged a moment
// ago, or another node's.
type gatedFeed struct {
	*session.MemLog
	mu     sync.Mutex
	closed bool
	opened chan struct{}
}

func (g *gatedFeed) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed, g.opened = true, make(chan struct{})
	}
}

func (g *gatedFeed) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.opened)
	}
}

func (g *gatedFeed) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	return g.MemLog.Follow(ctx, from, func(recs []session.Stored) error {
		g.mu.Lock()
		closed, opened := g.closed, g.opened
		g.mu.Unlock()
		if closed {
			select {
			case <-opened:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return apply(recs)
	})
}

// freshness reads a reply's Pi-Applied-Seq and Pi-Lag.
func freshness(t *testing.T, h http.Header) (applied, lag uint64) {
	t.Helper()
	applied, err1 := strconv.ParseUint(h.Get("Pi-Applied-Seq"), 10, 64)
	lag, err2 := strconv.ParseUint(h.Get("Pi-Lag"), 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("freshness headers: Pi-Applied-Seq %q, Pi-Lag %q", h.Get("Pi-Applied-Seq"), h.Get("Pi-Lag"))
	}
	return applied, lag
}

// TestReadYourOwnWrites: a node that acknowledged a write does not answer a
// read of that session (nor a list) without it — it waits for its Store,
// and past the bound answers 504 — and while it lags, every read says so
// in Pi-Lag, with Pi-Applied-Seq naming what the body reflects.
func TestReadYourOwnWrites(t *testing.T) {
	var g *gatedFeed
	e := newEnvFeed(t, func(l *session.MemLog) session.Feed {
		g = &gatedFeed{MemLog: l}
		return g
	}, func(c *api.Config) { c.MinSeqTimeout = 300 * time.Millisecond })
	var a, b wire.WriteResult
	e.ok(201, "POST", "/v1/sessions", `{"entries":[{"type":"message","id":"a0000001","message":{"role":"user","content":"q","timestamp":1}}]}`, &a)
	e.ok(201, "POST", "/v1/sessions", `{"entries":[{"type":"message","id":"b0000001","message":{"role":"user","content":"q","timestamp":1}}]}`, &b)
	// Reads of a session this node wrote wait for it: these see it at once.
	e.ok(200, "GET", "/v1/sessions/"+a.SessionID+"/entries", nil, nil)

	g.close()
	var w wire.WriteResult
	e.ok(200, "POST", "/v1/sessions/"+a.SessionID+"/entries", `{"entries":[{"type":"message","id":"a0000002","parentId":"a0000001","message":{"role":"user","content":"more","timestamp":2}}]}`, &w)

	// Another session: answered at once, honestly behind.
	resp := e.raw("GET", "/v1/sessions/"+b.SessionID, nil)
	resp.Body.Close()
	applied, lag := freshness(t, resp.Header)
	if n := resp.Header.Get("Pi-Node"); n != "n1" {
		t.Fatalf("Pi-Node %q, want the answering node n1", n)
	}
	if resp.StatusCode != 200 || applied >= w.LastSeq || applied+lag < w.LastSeq {
		t.Fatalf("read of another session while behind: status %d, Pi-Applied-Seq %d, Pi-Lag %d; the node acknowledged seq %d, so lag must cover it", resp.StatusCode, applied, lag, w.LastSeq)
	}
	// The written session and the catalog: not without the write.
	for _, path := range []string{"/v1/sessions/" + a.SessionID + "/export", "/v1/sessions/" + a.SessionID, "/v1/sessions"} {
		code, body := e.do("GET", path, nil)
		if code != http.StatusGatewayTimeout || !strings.Contains(string(body), "which this node acknowledged") {
			t.Fatalf("GET %s before the node applied its own write: %d %s, want 504 naming the write", path, code, body)
		}
	}

	// A read started while behind answers once the Store has the write.
	done := make(chan *http.Response, 1)
	go func() { done <- e.raw("GET", "/v1/sessions/"+a.SessionID+"/export", nil) }()
	g.open()
	resp = <-done
	var body strings.Builder
	body.WriteString(readAll(t, resp))
	applied, lag = freshness(t, resp.Header)
	if resp.StatusCode != 200 || !strings.Contains(body.String(), `"a0000002"`) || applied < w.LastSeq || lag != 0 {
		t.Fatalf("export after the node applied its write: %d, Pi-Applied-Seq %d, Pi-Lag %d:\n%s", resp.StatusCode, applied, lag, body.String())
	}
}

// TestStrongRead: consistency=strong reflects a write acknowledged by
// another node (here: written to the log directly) before the read began;
// a plain read does not wait for it. Bad values name the field.
func TestStrongRead(t *testing.T) {
	var g *gatedFeed
	e := newEnvFeed(t, func(l *session.MemLog) session.Feed {
		g = &gatedFeed{MemLog: l}
		return g
	}, func(c *api.Config) { c.MinSeqTimeout = 300 * time.Millisecond })
	var a wire.WriteResult
	e.ok(201, "POST", "/v1/sessions", `{"entries":[{"type":"message","id":"a0000001","message":{"role":"user","content":"q","timestamp":1}}]}`, &a)
	e.ok(200, "GET", "/v1/sessions/"+a.SessionID, nil, nil)

	g.close()
	line := `{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"elsewhere","timestamp":2}}`
	seqs, err := e.log.Append(context.Background(), a.SessionID, a.LastSeq, []session.Record{{Type: "message", ID: "a0000002", Parent: "a0000001", Data: []byte(line)}})
	if err != nil {
		t.Fatal(err)
	}
	var d wire.Detail
	e.ok(200, "GET", "/v1/sessions/"+a.SessionID, nil, &d)
	if d.LastSeq != a.LastSeq {
		t.Fatalf("plain read: lastSeq %d, want %d (it does not wait for other nodes' writes)", d.LastSeq, a.LastSeq)
	}
	for _, path := range []string{"/v1/sessions/" + a.SessionID + "?consistency=strong", "/v1/sessions?consistency=strong"} {
		code, body := e.do("GET", path, nil)
		if code != http.StatusGatewayTimeout || !strings.Contains(string(body), "consistency=strong") {
			t.Fatalf("GET %s while the node lags: %d %s, want 504", path, code, body)
		}
	}
	// Having asked the leader, the node knows it lags.
	resp := e.raw("GET", "/v1/sessions/"+a.SessionID, nil)
	resp.Body.Close()
	if applied, lag := freshness(t, resp.Header); applied+lag < seqs[0] || lag == 0 {
		t.Fatalf("after a strong read named seq %d: Pi-Applied-Seq %d, Pi-Lag %d", seqs[0], applied, lag)
	}

	done := make(chan *http.Response, 1)
	go func() { done <- e.raw("GET", "/v1/sessions/"+a.SessionID+"?consistency=strong", nil) }()
	g.open()
	resp = <-done
	if err := json.Unmarshal([]byte(readAll(t, resp)), &d); err != nil || resp.StatusCode != 200 || d.LastSeq != seqs[0] {
		t.Fatalf("strong read: %d, lastSeq %d (%v), want %d", resp.StatusCode, d.LastSeq, err, seqs[0])
	}
	e.fails(400, "invalid", "consistency", "GET", "/v1/sessions/"+a.SessionID+"?consistency=eventual", nil)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadYourWritesAcrossRestart: a node that restarted has forgotten what
// it acknowledged before, so until it has applied the log as far as it
// went when the node started, a read waits for that (and past the bound
// answers 504), rather than answer without a write it may have
// acknowledged before the restart.
func TestReadYourWritesAcrossRestart(t *testing.T) {
	var g *gatedFeed
	var sid string
	e := newEnvFeed(t, func(l *session.MemLog) session.Feed {
		// Written before this node's Store starts: the previous process's acks.
		sid = writeSession(t, l)
		g = &gatedFeed{MemLog: l, closed: true, opened: make(chan struct{})}
		return g
	}, func(c *api.Config) { c.MinSeqTimeout = 300 * time.Millisecond })
	code, body := e.do("GET", "/v1/sessions/"+sid+"/export", nil)
	if code != http.StatusGatewayTimeout || !strings.Contains(string(body), "when this node started") {
		t.Fatalf("read before the restarted node applied the log's end: %d %s, want 504 naming the start", code, body)
	}
	g.open()
	e.ok(200, "GET", "/v1/sessions/"+sid+"/export", nil, nil)
}

// writeSession stores a session of two entries straight into the log.
func writeSession(t *testing.T, l *session.MemLog) string {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	sid := u.String()
	h := tree.NewHeader(sid, "2026-12-01T10:00:00.000Z", "/w", "")
	e := `{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"q","timestamp":1}}`
	if _, err := l.Append(context.Background(), sid, 0, []session.Record{session.HeaderRecord(&h), {Type: "message", ID: "a0000001", Data: []byte(e)}}); err != nil {
		t.Fatal(err)
	}
	return sid
}
