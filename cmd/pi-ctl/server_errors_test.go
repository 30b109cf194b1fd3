package main

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// expectFailure runs pi-ctl and wants exit status code with exactly one
// line on stderr containing want, and nothing on stdout.
func expectFailure(t *testing.T, code int, want string, environ map[string]string, args ...string) {
	t.Helper()
	r := runCLIEnv(t, environ, args...)
	if l := lines(r.stderr); r.code != code || len(l) != 1 || !strings.Contains(l[0], want) || r.stdout != "" {
		t.Errorf("pi-ctl %q: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", args, r.code, r.stdout, r.stderr, code, want)
	}
}

// TestUnknownSession: every command on a session that does not exist
// exits 1 with the node's "not found", on both transports.
func TestUnknownSession(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		const sid = "01a22ba6-0000-7000-8000-00000000dead"
		for _, args := range [][]string{
			{"show", sid}, {"tree", sid}, {"tree", sid, "--json"}, {"tree", sid, "--client", "c"},
			{"context", sid}, {"context", sid, "--json", "--llm"}, {"log", sid}, {"log", sid, "-f"},
			{"export", sid}, {"cursor", "set", sid, "c", "null"},
			{"label", sid, "aaaaaaaa", "x"}, {"rename", sid, "x"}, {"fork", sid, "aaaaaaaa"},
		} {
			expectFailure(t, 1, "session "+sid+": not found", nil, withFlags(conn, args...)...)
		}
		// The cursor operations answer for the cursor, not the session
		// (cursor.list of an unknown session answers an empty list).
		expectFailure(t, 1, "not found", nil, withFlags(conn, "cursor", "get", sid, "c")...)
		expectFailure(t, 1, `sessionId: "nope" is not a UUID`, nil, withFlags(conn, "show", "nope")...)
		// An upper-case id is not the session of its lower-case form.
		upper := strings.ToUpper(importedSID(t, n))
		for _, args := range [][]string{
			{"show", upper}, {"tree", upper}, {"context", upper}, {"log", upper}, {"export", upper},
			{"cursor", "get", upper, "c"}, {"cursor", "set", upper, "c", "null"},
			{"label", upper, "aaaaaaaa", "x"}, {"fork", upper, "aaaaaaaa"},
		} {
			expectFailure(t, 1, `use the lower-case form "`+strings.ToLower(upper)+`"`, nil, withFlags(conn, args...)...)
		}
		expectFailure(t, 1, `leaf: entry "zzzz" is not in the session: not found`, nil, withFlags(conn, "context", importedSID(t, n), "--leaf", "zzzz")...)
	})
}

func importedSID(t *testing.T, n *node) string {
	t.Helper()
	_, sid, _ := importedSession(t, n, "/errors")
	return sid
}

// TestServerUsageErrors: wrong invocations exit 2 with one line pointing
// at the command's help, before any connection is tried.
func TestServerUsageErrors(t *testing.T) {
	sid := "01a22ba6-0000-7000-8000-00000000dead"
	for _, args := range [][]string{
		{"ls", "--bogus"}, {"ls", "extra"}, {"ls", "--limit", "0"}, {"ls", "--limit", "1001"}, {"ls", "--since", "yesterday"},
		{"show"}, {"show", sid, sid}, {"tree", sid, "--width", "-1"}, {"context", sid, "--leaf"},
		{"log"}, {"log", sid, "--after-seq", "x"}, {"cursor"}, {"cursor", "frob"}, {"cursor", "get", sid},
		{"cursor", "set", sid, "c"}, {"label", sid, "e"}, {"label", sid, "e", "text", "--clear"}, {"label", sid, "null", "x"},
		{"rename", sid}, {"fork", sid}, {"import"}, {"import", "x", "-j", "0"}, {"export"}, {"status", "x"},
		{"ls", "--server", "nats://x:1", "--http", "http://x:1"}, {"ls", "--timeout", "0s"}, {"ls", "--token", "t"},
		{"ls", "--password", "p"}, {"ls", "--tls-cert", "c.pem"}, {"ls", "--http", "ftp://x"}, {"ls", "--http", "h:1", "--creds", "c"},
		{"ls", "--http", "h:1", "--tls-ca", "/nonexistent/ca.pem"}, {"ls", "--consistency", "eventual"},
	} {
		expectFailure(t, 2, "--help", nil, args...)
	}
}

// TestUnreachable: no node at the address, or one that never answers:
// exit 1 quickly with a clear message and a hint.
func TestUnreachable(t *testing.T) {
	closed := strconv.Itoa(testutil.FreePort(t))
	// A listener that accepts connections and never says a word: the
	// kernel completes the handshake, so only --timeout ends the wait.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	silent := strconv.Itoa(mute.Addr().(*net.TCPAddr).Port)
	file, _ := newSessionFile(t, "/unreachable")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "--server", "nats://127.0.0.1:" + closed}, "cannot reach pi-node at nats://127.0.0.1:" + closed + ": nats: no servers available"},
		{[]string{"status", "--http", "127.0.0.1:" + closed}, "connection refused (is pi-node running? point --http"},
		{[]string{"show", "x", "--server", "nats://127.0.0.1:" + silent}, "cannot reach pi-node at nats://127.0.0.1:" + silent},
		{[]string{"show", "x", "--http", "http://127.0.0.1:" + silent}, "no reply in time (raise --timeout"},
		{[]string{"import", file, "--http", "http://127.0.0.1:" + closed}, "cannot reach pi-node"},
	} {
		start := time.Now()
		expectFailure(t, 1, c.want, nil, append(c.args, "--timeout", "500ms")...)
		if d := time.Since(start); d > testutil.Scale(3*time.Second) {
			t.Errorf("pi-ctl %q took %v with --timeout 500ms", c.args, d)
		}
	}
	// $PI_CTL_SERVER and $PI_CTL_HTTP choose the address; a --server flag
	// beats $PI_CTL_HTTP.
	expectFailure(t, 1, "at nats://127.0.0.1:"+closed, map[string]string{"PI_CTL_SERVER": "nats://127.0.0.1:" + closed}, "ls")
	expectFailure(t, 1, "at http://127.0.0.1:"+closed, map[string]string{"PI_CTL_HTTP": "127.0.0.1:" + closed}, "ls")
	expectFailure(t, 1, "at nats://127.0.0.1:"+closed, map[string]string{"PI_CTL_HTTP": "127.0.0.1:1"}, "ls", "--server", "nats://127.0.0.1:"+closed)
}

// TestNoResponders: a NATS server without pi-node on it.
func TestNoResponders(t *testing.T) {
	port := testutil.FreePort(t)
	cmd := exec.Command(builtBinary(t, "nats-server"), "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := startProcess(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	testutil.WaitFor(t, 10*time.Second, func() error {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return fmt.Errorf("nats-server listening: %w", err)
		}
		c.Close()
		return nil
	})
	expectFailure(t, 1, "no pi-node serves pi.v1.list (is pi-node running and connected to this NATS server?)", nil, "ls", "--server", url)
}

// TestToken: a node started with --http-token refuses requests without
// the token (401) and says what to do; the token from $PI_CTL_TOKEN works.
func TestToken(t *testing.T) {
	n := startNode(t, "tok", "", "--http-token", "s3cret")
	expectFailure(t, 1, "(pass a token of the node's --http-token or --http-tokens with --token or $PI_CTL_TOKEN)", nil, "ls", "--http", n.httpURL)
	expectFailure(t, 1, "(the token given with --token or $PI_CTL_TOKEN is not one the node knows)", nil, "status", "--http", n.httpURL, "--token", "wrong")
	expectFailure(t, 1, "a valid bearer token is required", nil, "log", "01a22ba6-0000-7000-8000-00000000dead", "-f", "--http", n.httpURL, "--token", "wrong")
	if r := runCLIEnv(t, map[string]string{"PI_CTL_HTTP": n.httpURL, "PI_CTL_TOKEN": "s3cret"}, "ls"); r.code != 0 || !strings.HasPrefix(r.stdout, "ID ") {
		t.Errorf("ls with the token from the environment: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// The NATS service checks no token (docs/API.md, Auth).
	if r := runCLI(t, "", "ls", "--server", n.natsURL); r.code != 0 {
		t.Errorf("ls over NATS: exit %d, %q", r.code, r.stderr)
	}
}

// TestMaxPayload: a file over the NATS max_payload is refused before it
// is sent, with a pointer to --http; so is the export of such a session.
func TestMaxPayload(t *testing.T) {
	n := sharedNode(t)
	_, sid := newSessionFile(t, "/big")
	blob := strings.Repeat("x", 3<<20)
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/big"}`+"\n", sid)
	for k := range 3 { // three entries of 3 MiB: each fits a NATS message, the file does not
		parent := "null"
		if k > 0 {
			parent = fmt.Sprintf(`"b000000%d"`, k)
		}
		fmt.Fprintf(&b, `{"type":"custom","id":"b000000%d","parentId":%s,"timestamp":"2026-01-01T00:00:0%d.000Z","customType":"blob","data":%q}`+"\n", k+1, parent, k+1, blob)
	}
	path := writeFile(t, "big.jsonl", b.String())

	r := runCLI(t, "", "import", path, "--server", n.natsURL)
	if r.code != 1 || !strings.Contains(r.stdout, "exceeds the NATS server's max_payload of 8.0 MiB (use --http URL") {
		t.Errorf("import over NATS: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if out := mustRun(t, "import", path, "--http", n.httpURL); !strings.HasPrefix(out, "ok      "+sid+"  3 entries") {
		t.Errorf("import over HTTP: %q", out)
	}
	expectFailure(t, 1, "(pi-ctl: retry with --http URL)", nil, "export", sid, "--server", n.natsURL, "--min-seq", "1")
	// A page of these entries does not fit one NATS reply either: log asks
	// for smaller pages until it does.
	if out := mustRun(t, "log", sid, "--server", n.natsURL, "--width", "60"); lineCount(out) != 3 || !strings.Contains(out, "b0000003  [custom blob]") {
		t.Errorf("log of big entries over NATS:\n%s", out)
	}
	if out := mustRun(t, "export", sid, "--http", n.httpURL); out != b.String() {
		t.Errorf("export over HTTP: %d bytes, want %d", len(out), b.Len())
	}
}

// TestServerHelp: every server command has --help on stdout, with the
// connection flags.
func TestServerHelp(t *testing.T) {
	top := mustRun(t, "--help")
	for _, c := range commands {
		if !strings.Contains(top, "  "+c.name+" ") {
			t.Errorf("top-level help does not list %q", c.name)
		}
		if c.name == "file" || c.name == "cursor" || c.name == "archive" || c.name == "failover" || c.name == "failback" || c.name == "shards" || c.name == "backup" || c.name == "restore" || c.name == "erasures" || c.name == "token" ||
			c.name == "nats-user" || c.name == "gen-secrets" {
			continue // no pi-node API: offline, a subcommand table, or JetStream itself (region_test.go)
		}
		if h := mustRun(t, c.name, "--help"); !strings.Contains(h, "Usage: pi-ctl "+c.name) || !strings.Contains(h, "-server URL") || !strings.Contains(h, "-http URL") {
			t.Errorf("%s --help:\n%s", c.name, h)
		}
	}
	for _, c := range []string{"backup", "restore", "erasures"} { // JetStream itself: --server, no --http
		if h := mustRun(t, c, "--help"); !strings.Contains(h, "Usage: pi-ctl "+c) || !strings.Contains(h, "-server URL") || strings.Contains(h, "-http URL") {
			t.Errorf("%s --help:\n%s", c, h)
		}
	}
	for _, sub := range []string{"show", "migrate"} { // JetStream itself: --server, no --http
		if h := mustRun(t, "shards", sub, "--help"); !strings.Contains(h, "Usage: pi-ctl shards") || !strings.Contains(h, "-server URL") || strings.Contains(h, "-http URL") {
			t.Errorf("shards %s --help:\n%s", sub, h)
		}
	}
	for _, c := range cursorCommands {
		if h := mustRun(t, "cursor", c.name, "-h"); !strings.Contains(h, "Usage: pi-ctl cursor "+c.name) {
			t.Errorf("cursor %s --help:\n%s", c.name, h)
		}
	}
	for _, c := range tokenCommands {
		if h := mustRun(t, "token", c.name, "-h"); !strings.Contains(h, "Usage: pi-ctl token "+c.name) {
			t.Errorf("token %s --help:\n%s", c.name, h)
		}
	}
	for _, c := range natsUserCommands {
		if h := mustRun(t, "nats-user", c.name, "-h"); !strings.Contains(h, "Usage: pi-ctl nats-user "+c.name) {
			t.Errorf("nats-user %s --help:\n%s", c.name, h)
		}
	}
	if h := mustRun(t, "gen-secrets", "-h"); !strings.Contains(h, "Usage: pi-ctl gen-secrets") || !strings.Contains(h, "-valid-for") {
		t.Errorf("gen-secrets --help:\n%s", h)
	}
	for _, c := range archiveCommands {
		if h := mustRun(t, "archive", c.name, "-h"); !strings.Contains(h, "Usage: pi-ctl archive "+c.name) || !strings.Contains(h, "-http URL") {
			t.Errorf("archive %s --help:\n%s", c.name, h)
		}
	}
}
