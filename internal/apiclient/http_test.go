package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TestReadEvents parses an event stream as pi-node writes it: comments,
// entry events whose data spans lines, events of other types.
func TestReadEvents(t *testing.T) {
	stream := ": watching\n\n" +
		"id: 4\nevent: entry\ndata: {\"a\":1}\n\n" +
		": ping\n\n" +
		"id: 5\r\nevent: entry\r\ndata: {\"b\":\r\ndata:2}\r\n\r\n" +
		"id: 6\nevent: other\ndata: x\n\n" +
		"id: 7\nevent: entry\ndata: {\"c\":3}" // cut off: no event
	var got []string
	err := readEvents(strings.NewReader(stream), func(id string, data []byte) error {
		got = append(got, id+"="+string(data))
		return nil
	})
	want := []string{`4={"a":1}`, "5={\"b\":\n2}"}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, err %v; want %q", got, err, want)
	}
	stop := errors.New("stop")
	err = readEvents(strings.NewReader(stream), func(string, []byte) error { return stop })
	var se *sinkError
	if !errors.As(err, &se) || se.err != stop {
		t.Errorf("a failing handler: %v", err)
	}
}

// TestHTTPRequest checks how operations map to routes: path parameters
// escaped, the rest in the query of a GET and in the body of a PUT, null
// as "null", --min-seq added.
func TestHTTPRequest(t *testing.T) {
	b, err := NewHTTP(HTTPOptions{URL: "127.0.0.1:8080/", Token: "tok", Timeout: time.Second, MinSeq: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op        string
		p         wire.Request
		url, body string
	}{
		{"context", wire.ContextRequest{SessionID: "s", Leaf: wire.NullID(), Format: "llm"}, "http://127.0.0.1:8080/v1/sessions/s/context?format=llm&leaf=null&minSeq=7", ""},
		{"cursor.set", wire.CursorSetRequest{SessionID: "s", Client: "a/b", LeafID: wire.EntryID("x")}, "http://127.0.0.1:8080/v1/sessions/s/cursors/a%2Fb", `{"leafId":"x","minSeq":7}`},
		{"list", wire.ListRequest{MinSeq: uint64(9), Name: "a&b"}, "http://127.0.0.1:8080/v1/sessions?minSeq=9&name=a%26b", ""},
	} {
		req, err := b.request(context.Background(), c.p)
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
		}
		if req.URL.String() != c.url || string(body) != c.body || req.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("%s: %s %s %s", c.op, req.Method, req.URL, body)
		}
	}
	// A configured consistency goes with log reads only, and a request's own wins.
	sb, err := NewHTTP(HTTPOptions{URL: "127.0.0.1:8080", Timeout: time.Second, Consistency: wire.ConsistencyStrong})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p   wire.Request
		url string
	}{
		{wire.ExportRequest{SessionID: "s"}, "http://127.0.0.1:8080/v1/sessions/s/export?consistency=strong"},
		{wire.ListRequest{}, "http://127.0.0.1:8080/v1/sessions?consistency=strong"},
		{wire.CursorGetRequest{SessionID: "s", Client: "c"}, "http://127.0.0.1:8080/v1/sessions/s/cursors/c"},
		{wire.GetRequest{SessionID: "s", Consistency: "x"}, "http://127.0.0.1:8080/v1/sessions/s?consistency=x"},
	} {
		req, err := sb.request(context.Background(), c.p)
		if err != nil || req.URL.String() != c.url {
			t.Errorf("%s with Consistency strong: %v %v, want %s", c.p.Op().Name, req.URL, err, c.url)
		}
	}
	if _, err := NewHTTP(HTTPOptions{URL: "ftp://x", Timeout: time.Second}); err == nil {
		t.Error("an ftp URL was accepted")
	}
}

// TestDecodeError reads pi-node's error object, and anything else.
func TestDecodeError(t *testing.T) {
	ae := decodeError("get", 404, []byte(`{"error":{"code":"not_found","message":"session x: not found","field":"sessionId"}}`), "")
	if ae.Foreign || ae.Status != 404 || ae.Code != "not_found" || ae.Field != "sessionId" || ae.Error() != "session x: not found" {
		t.Errorf("pi-node's error: %+v", ae)
	}
	if ae := decodeError("get", 502, []byte("<html>bad gateway</html>"), ""); !ae.Foreign || ae.Error() != "<html>bad gateway</html> (status 502)" {
		t.Errorf("a proxy's page: %q", ae.Error())
	}
	if ae := decodeError("get", 503, nil, ""); ae.Error() != "Service Unavailable (status 503)" || !Temporary(ae) {
		t.Errorf("an empty reply: %q", ae.Error())
	}
	if Temporary(&Error{Status: http.StatusNotFound}) || !Temporary(&UnreachableError{Err: io.EOF}) {
		t.Error("Temporary misclassifies")
	}
}

// TestFollowReconnects runs the watch follower against a stand-in server:
// the first stream sends one entry and then falls silent (a dead peer),
// the second repeats it and sends the next one. The follower must give up
// the silent stream, resume with Last-Event-ID, and pass each entry on
// once.
func TestFollowReconnects(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		switch n {
		case 1:
			io.WriteString(w, "id: 3\nevent: entry\ndata: {\"id\":\"a\"}\n\n")
		case 2:
			io.WriteString(w, "id: 3\nevent: entry\ndata: {\"id\":\"a\"}\n\n: ping\n\nid: 4\nevent: entry\ndata: {\"id\":\"b\"}\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent until the client leaves
	}))
	defer srv.Close()
	b, err := NewHTTP(HTTPOptions{URL: srv.URL, Timeout: time.Second, WatchSilence: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	var retries []string
	err = b.Follow(ctx, "01a22ba6-0000-7000-8000-000000000001", 0, func(e SeqEntry) error {
		got = append(got, fmt.Sprintf("%d=%s", e.Seq, e.Entry))
		if len(got) == 2 {
			cancel()
		}
		return nil
	}, func(err error) { retries = append(retries, err.Error()) })
	mu.Lock()
	defer mu.Unlock()
	if err != nil || strings.Join(got, " ") != `3={"id":"a"} 4={"id":"b"}` || len(lastIDs) < 2 || lastIDs[0] != "" || lastIDs[1] != "3" ||
		len(retries) == 0 || !strings.Contains(retries[0], "the watch stream said nothing for 50ms") {
		t.Errorf("follow: err %v, entries %q, Last-Event-IDs %q, retries %q", err, got, lastIDs, retries)
	}
}
