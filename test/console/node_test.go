//go:build linux

package console

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

const nodeName = "console-node"

// node is the pi-node the console is served from, and the tokens its
// --http-tokens file holds.
type node struct {
	*proctest.Proc
	base                    string // http://127.0.0.1:port
	readToken, writeToken   string // scopes read, and write
	editToken               string // read and write: a console that deletes
	wrongToken              string // in no file: refused with 401
	readClient, writeClient *http.Client

	mu      sync.Mutex
	watches []watchRequest // every watch request through specProxy, in order
}

// watchRequest is where a watch request of the page asked to start.
type watchRequest struct {
	lastEventID string // the Last-Event-ID header
	afterSeq    string // the afterSeq query
}

// bearer sends one token with every request, so that proctest.Do serves
// the API calls as it is.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func newToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startNode starts pi-node with the console and a tokens file of a reader
// and a writer: the console must work with the read token alone, as the
// dashboard token docs/API.md describes.
func startNode(t *testing.T) *node { return startNodeAuth(t, true) }

// startNodeAuth starts pi-node with the console; without tokens it has no
// tokens file, as a node on loopback runs by default, and the node's
// clients send no token.
func startNodeAuth(t *testing.T, tokens bool) *node {
	t.Helper()
	dir := t.TempDir() // before proctest.New: the files must outlive the process
	nd := &node{readToken: newToken(t), writeToken: newToken(t), editToken: newToken(t), wrongToken: newToken(t)}
	ports := testutil.FreePorts(t, 2)
	nd.base = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	nd.readClient = &http.Client{Timeout: 10 * time.Second, Transport: bearer{nd.readToken}}
	nd.writeClient = &http.Client{Timeout: 30 * time.Second, Transport: bearer{nd.writeToken}}
	args := []string{"--node-name", nodeName, "--console", "--data-dir", filepath.Join(dir, "data"),
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--shutdown-grace", "10s"}
	if tokens {
		args = append(args, "--http-tokens", writeTokens(t, dir, nd))
	} else {
		nd.readToken, nd.writeToken, nd.editToken = "", "", ""
		nd.readClient = &http.Client{Timeout: 10 * time.Second}
		nd.writeClient = &http.Client{Timeout: 30 * time.Second}
	}
	nd.Proc = proctest.New(t, nodeName, piNodeBin, args...)
	nd.Start(t)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("pi-node /readyz", func() error {
		if !nd.Running() {
			return fmt.Errorf("exited: %v", nd.ExitErr())
		}
		return proctest.Ready(nd.base)
	}))
	return nd
}

// writeTokens writes the --http-tokens file of nd's reader, writer and
// editor into dir and returns its path.
func writeTokens(t *testing.T, dir string, nd *node) string {
	t.Helper()
	var file bytes.Buffer
	fmt.Fprintln(&file, "# the console test's tokens: sha256 of each, never the token")
	for _, tok := range []struct {
		name, token string
		scopes      []string
	}{
		{"console-reader", nd.readToken, []string{"read"}}, {"console-writer", nd.writeToken, []string{"write"}},
		{"console-editor", nd.editToken, []string{"read", "write"}},
	} {
		line, _ := json.Marshal(api.TokenLine{Name: tok.name, SHA256: api.HashToken(tok.token), Scopes: tok.scopes})
		fmt.Fprintf(&file, "%s\n", line)
	}
	tokens := filepath.Join(dir, "http-tokens")
	if err := os.WriteFile(tokens, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokens
}

// call sends one API request with hc's token and returns the body of an
// answer with status want; any other answer fails the test.
func (nd *node) call(t *testing.T, hc *http.Client, method, path string, body []byte, want int) []byte {
	t.Helper()
	st, _, data, err := proctest.Do(context.Background(), hc, method, nd.base+path, body)
	if err != nil || st != want {
		t.Fatalf("%s %s: %d %v, want %d: %.300s", method, path, st, err, want, data)
	}
	return data
}

// detail is what GET /v1/sessions/{id} says of a session's end.
type detail struct {
	LeafID  string `json:"leafId"`
	LastSeq uint64 `json:"lastSeq"`
}

func (nd *node) detail(t *testing.T, sid string) detail {
	t.Helper()
	var d detail
	if err := json.Unmarshal(nd.call(t, nd.readClient, http.MethodGet, "/v1/sessions/"+sid, nil, http.StatusOK), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// leaf is the session's default leaf, as the API has it now.
func (nd *node) leaf(t *testing.T, sid string) string {
	t.Helper()
	return nd.detail(t, sid).LeafID
}

// append stores one user message, id under parent, with the write token.
func (nd *node) append(t *testing.T, sid, id, parent, text string) {
	t.Helper()
	nd.call(t, nd.writeClient, http.MethodPost, "/v1/sessions/"+sid+"/entries",
		proctest.AppendBody(proctest.NewEntry(id, parent, text, time.Now())), http.StatusOK)
}

// setCursor puts client's cursor on leaf, with the write token.
func (nd *node) setCursor(t *testing.T, sid, client, leaf string) {
	t.Helper()
	nd.call(t, nd.writeClient, http.MethodPut, "/v1/sessions/"+sid+"/cursors/"+client,
		[]byte(fmt.Sprintf(`{"leafId":%q}`, leaf)), http.StatusOK)
}

// watchRequests is every watch request specProxy has seen so far.
func (nd *node) watchRequests() []watchRequest {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return append([]watchRequest(nil), nd.watches...)
}

// importFile imports a pi session file with the write token and returns
// the session's id.
func (nd *node) importFile(t *testing.T, file []byte) (sid string, entries int) {
	t.Helper()
	var res struct {
		SessionID  string            `json:"sessionId"`
		EntryCount int               `json:"entryCount"`
		Skipped    []json.RawMessage `json:"skipped"`
	}
	if err := json.Unmarshal(nd.call(t, nd.writeClient, http.MethodPost, "/v1/import", file, http.StatusCreated), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) > 0 {
		t.Logf("import of %s skipped %d lines, as pi would", res.SessionID, len(res.Skipped))
	}
	return res.SessionID, res.EntryCount
}

// listed is a session of the API's list, as the catalog must show it.
type listed struct {
	SessionID     string    `json:"sessionId"`
	Name          *string   `json:"name"`
	EntryCount    int       `json:"entryCount"`
	Modified      time.Time `json:"modified"`
	ParentSession *string   `json:"parentSession"`
}

func (nd *node) list(t *testing.T) []listed { return nd.listWhere(t, "") }

// listWhere is the catalog as the API filters it by query (name=…&cwd=…).
func (nd *node) listWhere(t *testing.T, query string) []listed {
	t.Helper()
	var res struct {
		Sessions []listed `json:"sessions"`
		Next     string   `json:"next"`
	}
	if err := json.Unmarshal(nd.call(t, nd.readClient, http.MethodGet, "/v1/sessions?limit=1000&"+query, nil, http.StatusOK), &res); err != nil {
		t.Fatal(err)
	}
	if res.Next != "" {
		t.Fatalf("more than 1000 sessions: the test imports a few dozen")
	}
	return res.Sessions
}

// treeNode is a node of expected.json's "tree".
type treeNode struct {
	ID       string     `json:"id"`
	Children []treeNode `json:"children"`
}

// vector is one pi-v3 conformance case: pi's file, what pi answered for
// it, and each entry's line by id.
type vector struct {
	name     string
	file     []byte
	expected []byte // expected.json, for comparisons as JSON values
	exp      struct {
		SessionID string            `json:"sessionId"`
		Name      *string           `json:"name"`
		LeafID    string            `json:"leafId"`
		Labels    map[string]string `json:"labels"`
		Tree      []treeNode        `json:"tree"`
		Contexts  []struct {
			LeafID *string  `json:"leafId"`
			Path   []string `json:"path"`
		} `json:"contexts"`
	}
	lines map[string][]byte // entry id → its line in session.jsonl
	kinds map[string]string // entry id → the console's data-type: a message's role, else the entry's type
}

// loadVectors reads every pi-v3 case that has a session file (one where pi
// wrote none has nothing to import).
func loadVectors(t *testing.T) []*vector { return loadVectorSet(t, "pi-v3") }

// loadVectorSet reads every case of one vector set that has a session file.
func loadVectorSet(t *testing.T, set string) []*vector {
	t.Helper()
	var out []*vector
	for _, dir := range conformance.Cases(t, conformance.Dir(t), set) {
		path := filepath.Join(dir, "session.jsonl")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		v := &vector{name: filepath.Base(dir), file: conformance.MustRead(t, path),
			expected: conformance.MustRead(t, filepath.Join(dir, "expected.json")),
			lines:    map[string][]byte{}, kinds: map[string]string{}}
		if err := json.Unmarshal(v.expected, &v.exp); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(v.file))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var e struct {
				Type    string `json:"type"`
				ID      string `json:"id"`
				Message struct {
					Role string `json:"role"`
				} `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type == "session" || e.ID == "" {
				continue
			}
			v.lines[e.ID] = append([]byte(nil), sc.Bytes()...)
			v.kinds[e.ID] = e.Type
			if e.Type == "message" {
				v.kinds[e.ID] = e.Message.Role
			}
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("no %s conformance case with a session.jsonl", set)
	}
	return out
}

// pathTo is pi's path from the root to leaf id, from the expected
// contexts; a case without a context at id fails the test.
func (v *vector) pathTo(t *testing.T, id string) []string {
	t.Helper()
	for _, c := range v.exp.Contexts {
		if c.LeafID != nil && *c.LeafID == id {
			return c.Path
		}
	}
	t.Fatalf("%s: expected.json has no context at %s", v.name, id)
	return nil
}

// parents maps each node of the tree to its parent ("" for a root).
func parents(nodes []treeNode, parent string, into map[string]string) map[string]string {
	for _, n := range nodes {
		into[n.ID] = parent
		parents(n.Children, n.ID, into)
	}
	return into
}

// firstBranch is the first node, in pre-order, with more than one child.
func firstBranch(nodes []treeNode) *treeNode {
	for i := range nodes {
		if len(nodes[i].Children) > 1 {
			return &nodes[i]
		}
		if b := firstBranch(nodes[i].Children); b != nil {
			return b
		}
	}
	return nil
}

// Shape of the large session: a chain, and at its end one entry with
// wide children, all leaves. Whatever order the console gives siblings,
// the bottom of the tree is then some of those leaves.
const (
	chainLen = 4800
	wide     = 200
)

// largeSession is a pi v3 file of chainLen+wide message entries, user and
// assistant in turn, as pi writes them.
func largeSession(t *testing.T) (sid string, file []byte, root string, leaves map[string]bool) {
	t.Helper()
	sid = testutil.SessionID(t)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	header, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": sid,
		"timestamp": proctest.Stamp(start), "cwd": "/work/console-large"})
	b.Write(append(header, '\n'))
	leaves = map[string]bool{}
	write := func(i int, id, parent string) {
		at := start.Add(time.Duration(i+1) * time.Second)
		var line []byte
		if i%2 == 0 {
			e := proctest.NewEntry(id, parent, fmt.Sprintf("question %d: what does step %d change?", i, i), at)
			line, _ = json.Marshal(e)
		} else {
			var p any
			if parent != "" {
				p = parent
			}
			line, _ = json.Marshal(map[string]any{"type": "message", "id": id, "parentId": p, "timestamp": proctest.Stamp(at),
				"message": map[string]any{"role": "assistant", "api": "openai-completions", "provider": "fake", "model": "echo",
					"stopReason": "stop", "timestamp": at.UnixMilli(),
					"content": []map[string]any{{"type": "text", "text": fmt.Sprintf("answer %d %s", i, strings.Repeat("·", i%40))}}}})
		}
		b.Write(append(line, '\n'))
	}
	prev := ""
	for i := range chainLen {
		id := fmt.Sprintf("c%07d", i)
		write(i, id, prev)
		prev = id
	}
	for i := range wide {
		id := fmt.Sprintf("w%07d", i)
		write(chainLen+i, id, prev)
		leaves[id] = true
	}
	return sid, b.Bytes(), "c0000000", leaves
}

// specProxy is a reverse proxy to the node that checks every /v1 request
// the page sends, and its answer, against docs/openapi.yaml
// (internal/apispec): the console speaks the published contract and
// nothing else. The page is loaded through it, so its origin is the
// proxy's. While the node is down (the Resume check) a request gets no
// answer at all, as from a node that is not there. Every watch request's
// start (Last-Event-ID, afterSeq) is recorded: nd.watchRequests.
func (nd *node) specProxy(t *testing.T) string {
	t.Helper()
	target, err := url.Parse(nd.base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // watch's events as they come
	proxy.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	checked := apispec.Middleware(t, proxy)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			if strings.HasSuffix(r.URL.Path, "/watch") {
				nd.mu.Lock()
				nd.watches = append(nd.watches, watchRequest{lastEventID: r.Header.Get("Last-Event-ID"), afterSeq: r.URL.Query().Get("afterSeq")})
				nd.mu.Unlock()
			}
			checked.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
