package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/wire"
)

// sseEvent is one parsed event; comment lines are counted separately.
type sseEvent struct {
	id, event, data string
}

// sseStream reads events from a watch response on a goroutine.
type sseStream struct {
	resp     *http.Response
	events   chan sseEvent
	comments chan string
}

func (e *env) watch(ctx context.Context, path string, header ...string) *sseStream {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.http.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("watch %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 100), comments: make(chan string, 100)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.id != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				select {
				case s.comments <- line:
				default:
				}
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "id":
					ev.id = v
				case "event":
					ev.event = v
				case "data":
					ev.data += v
				}
			}
		}
	}()
	return s
}

func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("watch stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return sseEvent{}
}

func TestWatchResume(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("e1", "1"), assistantMsg("2"), userMsg("e3", "3"), assistantMsg("4"), userMsg("e5", "5"))
	sid := res.SessionID
	path := fmt.Sprintf("/v1/sessions/%s/watch?minSeq=%d", sid, res.LastSeq)

	ctx, cancel := context.WithCancel(context.Background())
	s := e.watch(ctx, path)
	var seen []sseEvent
	for range 3 {
		seen = append(seen, s.next(t))
	}
	cancel()
	s.resp.Body.Close()

	// Reconnect after the third event: the rest, then live appends.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	s2 := e.watch(ctx2, path, "Last-Event-ID", seen[2].id)
	defer s2.resp.Body.Close()
	seen = append(seen, s2.next(t), s2.next(t))
	var w writeResult
	e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+userMsg("e6", "live")+`]}`, &w)
	seen = append(seen, s2.next(t))

	ids := map[string]bool{}
	var last uint64
	for k, ev := range seen {
		seq, err := strconv.ParseUint(ev.id, 10, 64)
		if err != nil || seq <= last || ids[ev.id] || ev.event != "entry" || !strings.HasPrefix(ev.data, `{"type":"message"`) {
			t.Fatalf("event %d %+v: out of order, duplicate or malformed (last seq %d)", k, ev, last)
		}
		last, ids[ev.id] = seq, true
	}
	if len(seen) != 6 || last != w.LastSeq || !strings.Contains(seen[5].data, `"id":"e6"`) {
		t.Fatalf("got %d events ending at seq %d, want 6 ending at %d", len(seen), last, w.LastSeq)
	}

	// ?afterSeq= starts mid-session too.
	s3 := e.watch(ctx2, fmt.Sprintf("/v1/sessions/%s/watch?afterSeq=%d", sid, res.Entries[3].Seq))
	defer s3.resp.Body.Close()
	if ev := s3.next(t); ev.id != strconv.FormatUint(res.Entries[4].Seq, 10) {
		t.Fatalf("afterSeq: first event %+v, want seq %d", ev, res.Entries[4].Seq)
	}
}

func TestWatchHeartbeatAndErrors(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Heartbeat = 20 * time.Millisecond })
	res := e.create(userMsg("e1", "1"))
	path := fmt.Sprintf("/v1/sessions/%s/watch?minSeq=%d", res.SessionID, res.LastSeq)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := e.watch(ctx, path)
	defer s.resp.Body.Close()
	s.next(t)
	deadline := time.After(10 * time.Second)
	for pings := 0; pings < 2; {
		select {
		case c := <-s.comments:
			if c == ": ping" {
				pings++
			}
		case <-deadline:
			t.Fatal("no heartbeats")
		}
	}

	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/sessions/01a22ba6-0000-7000-8000-000000000000/watch", nil)
	e.fails(400, wire.CodeInvalid, "sessionId", "GET", "/v1/sessions/nope/watch", nil)
	e.fails(400, wire.CodeInvalid, "Last-Event-ID", "GET", path, nil, "Last-Event-ID", "abc")

	// Close ends open streams, so an HTTP server shutdown can complete.
	_ = e.api.Close()
	ended := make(chan struct{})
	go func() {
		for range s.events {
		}
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the watch stream")
	}
}

// TestWatchOutlivesServerTimeouts runs a stream through HTTPServer with
// tiny read and write timeouts: the stream must outlive both.
func TestWatchOutlivesServerTimeouts(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Heartbeat = 20 * time.Millisecond })
	hs := e.api.HTTPServer("")
	hs.ReadTimeout, hs.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	e.http.Close()
	hs.Handler = apispec.Middleware(t, hs.Handler)
	e.http = httptest.NewUnstartedServer(hs.Handler)
	e.http.Config = hs
	e.http.Start()
	defer e.http.Close()

	res := e.create(userMsg("e1", "1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := e.watch(ctx, fmt.Sprintf("/v1/sessions/%s/watch?minSeq=%d", res.SessionID, res.LastSeq))
	defer s.resp.Body.Close()
	s.next(t)
	start := time.Now()
	for pings := 0; time.Since(start) < 400*time.Millisecond; {
		select {
		case c := <-s.comments:
			if c == ": ping" {
				pings++
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("stream stalled after %d pings", pings)
		}
	}
	var w writeResult
	e.ok(200, "POST", "/v1/sessions/"+res.SessionID+"/entries", `{"entries":[`+userMsg("e2", "2")+`]}`, &w)
	if ev := s.next(t); ev.id != strconv.FormatUint(w.LastSeq, 10) {
		t.Fatalf("event after the timeouts: %+v", ev)
	}
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with an open stream: %v", err)
	}
}
