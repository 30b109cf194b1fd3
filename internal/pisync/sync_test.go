package pisync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestPaths pins pi's names: getDefaultSessionDir's encoding of the cwd
// and newSession's file name.
func TestPaths(t *testing.T) {
	for cwd, want := range map[string]string{
		"/home/dev/project":     "--home-dev-project--",
		"/home/dev/a:b/c":       "--home-dev-a-b-c--",
		"/srv/repo with spaces": "--srv-repo with spaces--",
		`C:\Users\dev\app`:      "--C--Users-dev-app--",
		"/":                     "----",
		"relative/dir":          "--relative-dir--",
	} {
		if got := DirName(cwd); got != want {
			t.Errorf("DirName(%q) = %q, want %q", cwd, got, want)
		}
	}
	const sid = "01a22ba6-da86-72a5-a528-04567dcafb37"
	if got, want := FileName("2026-11-30T08:51:24.934Z", sid), "2026-11-30T08-51-24-934Z_"+sid+".jsonl"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
	env := map[string]string{"HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	if d, _ := DefaultSessionsDir(getenv); d != "/home/u/.pi/agent/sessions" {
		t.Errorf("default dir %q", d)
	}
	env["PI_CODING_AGENT_DIR"] = "~/agent"
	if d, _ := DefaultSessionsDir(getenv); d != "/home/u/agent/sessions" {
		t.Errorf("with PI_CODING_AGENT_DIR: %q", d)
	}
}

// fixture is a node, a sessions directory and a Syncer's options.
type fixture struct {
	t     *testing.T
	c     apiclient.Client
	dir   string
	state string
	warn  *testutil.SyncBuffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	n := nodetest.Start(t, nodetest.Options{})
	c, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: n.HTTPURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f := &fixture{t: t, c: c, dir: t.TempDir(), state: filepath.Join(t.TempDir(), "state.json"), warn: &testutil.SyncBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the syncer's warnings:\n%s", f.warn.String())
		}
	})
	return f
}

// options are pi-ctl sync's: a file the node could not take yet (a 504
// while it applies a large import) is retried, for --retry-for's minute.
func (f *fixture) options() Options {
	return Options{Client: f.c, Dirs: []string{f.dir}, StatePath: f.state, RetryFor: testutil.Scale(time.Minute), Warn: func(s string) { fmt.Fprintln(f.warn, s) }}
}

// once runs one pass of a new Syncer (as a restarted pi-ctl would).
func (f *fixture) once() Summary {
	f.t.Helper()
	s, err := New(f.options())
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.Once(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	return s.Summary()
}

// synced writes a first flush of a new session and syncs it.
func (f *fixture) synced() (sid, path string) {
	f.t.Helper()
	sid, path = testutil.SessionID(f.t), filepath.Join(f.dir, "s.jsonl")
	write(f.t, path, firstFlush(sid))
	f.once()
	return sid, path
}

// applied waits until the node has applied everything it acknowledged of
// session sid: a node answers 504 to what must reflect its own writes
// past its 5 s bound, and applying megabytes under -race on a loaded
// machine can take longer. The tests that read or append right after a
// large import wait for it here, so they test the sync, not the node's
// speed.
func (f *fixture) applied(sid string) {
	f.t.Helper()
	testutil.WaitFor(f.t, testutil.Scale(time.Minute), func() error {
		_, err := f.c.Do(context.Background(), wire.ExportRequest{SessionID: sid})
		if apiclient.IsStatus(err, http.StatusGatewayTimeout) {
			return err
		}
		if err != nil {
			f.t.Fatal(err)
		}
		return nil
	})
}

func (f *fixture) export(sid string) string {
	f.t.Helper()
	f.applied(sid)
	b, err := f.c.Do(context.Background(), wire.ExportRequest{SessionID: sid})
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// write appends data to the file (creating it), as pi's appendFileSync.
func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// A small pi session: header, a user question and the first answer (the
// first flush), then more lines.
func headerLine(sid string) string {
	return `{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-11-30T08:51:24.934Z","cwd":"/home/dev/app"}`
}

func entryLine(id, parent, role, text string) string {
	p := `null`
	if parent != "" {
		p = `"` + parent + `"`
	}
	content := `"` + text + `"`
	if role == "assistant" {
		content = `[{"type":"text","text":"` + text + `"}],"provider":"anthropic","model":"claude-sonnet-4"`
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-11-30T08:51:25.000Z","message":{"role":"` + role + `","content":` + content + `,"timestamp":1796028685000}}`
}

func firstFlush(sid string) string {
	return headerLine(sid) + "\n" + entryLine("a0000001", "", "user", "why?") + "\n" + entryLine("a0000002", "a0000001", "assistant", "because") + "\n"
}

// TestPartialLine: a line without its newline is not sent; once pi ends
// it, it is appended; and the file in the cluster is the file.
func TestPartialLine(t *testing.T) {
	f := newFixture(t)
	sid := testutil.SessionID(t)
	path := SessionPath(f.dir, "/home/dev/app", "2026-11-30T08:51:24.934Z", sid)
	write(t, path, firstFlush(sid))
	if s := f.once(); s.Imported != 1 || s.Appended != 0 {
		t.Fatalf("first pass: %+v", s)
	}
	next := entryLine("a0000003", "a0000002", "user", "and then?")
	write(t, path, next[:20])
	if s := f.once(); s.Appended != 0 || s.Imported != 0 {
		t.Fatalf("half a line was sent: %+v", s)
	}
	if got := f.export(sid); got != firstFlush(sid) {
		t.Fatalf("export after half a line:\n%s", got)
	}
	write(t, path, next[20:]+"\n")
	if s := f.once(); s.Appended != 1 || s.Refused != 0 {
		t.Fatalf("the completed line: %+v", s)
	}
	data, _ := os.ReadFile(path)
	if got := f.export(sid); got != string(data) {
		t.Fatalf("export:\n%s\nfile:\n%s", got, data)
	}
	if s := f.once(); s.Appended+s.Imported != 0 {
		t.Fatalf("a pass over an unchanged file sent: %+v", s)
	}
}

// TestRefused: an entry whose id the cluster has with other content (two
// machines appended to one session and pi's ids collided) goes to the
// dead-letter file, is counted, and the lines after it still go in.
func TestRefused(t *testing.T) {
	f := newFixture(t)
	f.state = filepath.Join(f.dir, "state.json") // the dead-letter file in the sessions directory is no session
	sid := testutil.SessionID(t)
	a := filepath.Join(f.dir, "--home-dev-app--", "a.jsonl")
	write(t, a, firstFlush(sid)+entryLine("c0ffee01", "a0000002", "user", "from machine a")+"\n")
	if s := f.once(); s.Imported != 1 {
		t.Fatalf("%+v", s)
	}
	b := filepath.Join(f.dir, "--home-dev-app--", "b.jsonl")
	write(t, b, firstFlush(sid)+entryLine("c0ffee01", "a0000002", "user", "from machine b")+"\n"+entryLine("b0000002", "a0000002", "user", "b again")+"\n")
	s := f.once()
	if s.Refused != 1 || s.Appended != 1 || s.Known != 2 || !s.Failed() {
		t.Fatalf("summary %+v", s)
	}
	if !strings.Contains(f.warn.String(), b+":4: refused by the cluster") {
		t.Errorf("warning: %s", f.warn.String())
	}
	data, err := os.ReadFile(DeadLetterPath(f.state))
	if err != nil {
		t.Fatal(err)
	}
	var dl deadLetter
	if err := json.Unmarshal(data, &dl); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if dl.File != b || dl.Line != 4 || dl.SessionID != sid || dl.EntryID != "c0ffee01" || !strings.Contains(dl.Entry, "from machine b") {
		t.Errorf("dead letter %+v", dl)
	}
	if !strings.Contains(f.export(sid), `"b0000002"`) {
		t.Error("the line after the refused one is not in the cluster")
	}
	// Never sent again.
	if s := f.once(); s.Refused+s.Appended+s.Errors != 0 {
		t.Errorf("second pass: %+v", s)
	}
}

// TestHeaderChanged: a file rewritten with another header for the same
// session id is reported and not merged.
func TestHeaderChanged(t *testing.T) {
	f := newFixture(t)
	sid, path := f.synced()
	other := strings.Replace(firstFlush(sid), "/home/dev/app", "/home/dev/other", 1) + entryLine("a0000003", "a0000002", "user", "more") + "\n"
	if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	s := f.once()
	if s.Conflicts != 1 || s.Appended != 0 || !s.Failed() {
		t.Fatalf("summary %+v", s)
	}
	if !strings.Contains(f.warn.String(), path+":1: the header differs") {
		t.Errorf("warning: %s", f.warn.String())
	}
	if got := f.export(sid); got != firstFlush(sid) {
		t.Errorf("merged:\n%s", got)
	}
}

// TestBadFiles: a file whose first line is not a pi header is named with
// its line; a file with no complete line yet is waited for; a state file
// that does not parse is an error naming it.
func TestBadFiles(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.dir, "bad.jsonl"), "\n{\"type\":\"message\"}\n")
	write(t, filepath.Join(f.dir, "empty.jsonl"), "")
	write(t, filepath.Join(f.dir, "half.jsonl"), `{"type":"session"`)
	s := f.once()
	if s.Errors != 1 || s.Imported != 0 {
		t.Fatalf("summary %+v", s)
	}
	if want := filepath.Join(f.dir, "bad.jsonl") + ":2: not a pi session header"; !strings.Contains(f.warn.String(), want) {
		t.Errorf("warning %q, want %q", f.warn.String(), want)
	}
	// Told once: the next pass skips it while it is unchanged (or grows
	// behind the same bad first line), and a rewrite into a session is
	// synced.
	if s := f.once(); s.Errors != 0 || s.Imported != 0 {
		t.Fatalf("second pass over the unchanged bad file: %+v", s)
	}
	sid := testutil.SessionID(t)
	if err := os.Remove(filepath.Join(f.dir, "bad.jsonl")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.dir, "bad.jsonl"), firstFlush(sid))
	if s := f.once(); s.Errors != 0 || s.Imported != 1 {
		t.Fatalf("after the bad file was rewritten as a session: %+v", s)
	}
	if err := os.WriteFile(f.state, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(f.options()); err == nil || !strings.Contains(err.Error(), f.state) {
		t.Errorf("corrupt state: %v", err)
	}
}

// TestStateAtomic: the state is written whole (no temporary files left)
// and records each file's synced prefix.
func TestStateAtomic(t *testing.T) {
	f := newFixture(t)
	sid := testutil.SessionID(t)
	path := filepath.Join(f.dir, "s.jsonl")
	write(t, path, firstFlush(sid)+`{"type":"mess`)
	f.once()
	files, err := loadState(f.state)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	st := files[abs]
	if st == nil || st.SessionID != sid || st.Offset != int64(len(firstFlush(sid))) || st.Lines != 3 || st.LastID != "a0000002" || st.Hash != hashOf([]byte(firstFlush(sid))) {
		t.Fatalf("state %+v", st)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(f.state), ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWatch: the watcher picks up a new directory and a file in it, and
// every line pi adds.
func TestWatch(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.Rescan = time.Hour // only the events can find the file
	var mu sync.Mutex
	var firsts []bool // Progress.First of each call
	o.Progress = func(p Progress) {
		mu.Lock()
		firsts = append(firsts, p.First)
		mu.Unlock()
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.dir, "first.jsonl"), firstFlush(testutil.SessionID(t)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Watch(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	sid := testutil.SessionID(t)
	path := SessionPath(f.dir, "/home/dev/app", "2026-11-30T08:51:24.934Z", sid)
	// Once the first pass is done, a new directory and a file in it: only
	// the events can find them.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if s.Summary().Imported != 1 {
			return fmt.Errorf("first pass: %+v", s.Summary())
		}
		return nil
	})
	write(t, path, firstFlush(sid))
	want := firstFlush(sid)
	for k := 3; k < 8; k++ {
		l := entryLine(fmt.Sprintf("a000000%d", k), fmt.Sprintf("a000000%d", k-1), "user", "more") + "\n"
		write(t, path, l)
		want += l
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		b, err := f.c.Do(context.Background(), wire.ExportRequest{SessionID: sid})
		if err != nil || string(b) != want {
			return fmt.Errorf("export %q, %v", b, err)
		}
		return nil
	})
	// The state on disk catches up within about a second, with no more
	// events to wake the watch.
	abs, _ := filepath.Abs(path)
	testutil.WaitFor(t, 10*time.Second, func() error {
		files, err := loadState(f.state)
		if err != nil || files[abs] == nil || files[abs].Offset != int64(len(want)) {
			return fmt.Errorf("state of %s: %+v, %v", abs, files[abs], err)
		}
		return nil
	})
	// The first pass (over first.jsonl) is told as the first; the passes
	// the events started are not.
	mu.Lock()
	defer mu.Unlock()
	if len(firsts) < 2 || !firsts[0] || firsts[len(firsts)-1] {
		t.Errorf("Progress.First of the passes: %v", firsts)
	}
}

// TestPassRetry: a directory given twice lists each file once; when the
// node cannot be reached, a pass stops, and every file it did not bring to
// the cluster (failed or never reached) is returned for the retry.
func TestPassRetry(t *testing.T) {
	dead, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t)), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	dir := t.TempDir()
	var files []string
	for k := range 20 {
		p := filepath.Join(dir, fmt.Sprintf("%02d.jsonl", k))
		write(t, p, firstFlush(testutil.SessionID(t)))
		files = append(files, p)
	}
	s, err := New(Options{Client: dead, Dirs: []string{dir, dir + "/"}, StatePath: filepath.Join(t.TempDir(), "state.json"), Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	found, err := s.find()
	if err != nil || !slices.Equal(found, files) {
		t.Fatalf("find (the directory given twice): %v, %v", found, err)
	}
	retry, err := s.pass(context.Background(), files)
	var ue *apiclient.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("pass: %v", err)
	}
	if len(retry) != len(files) {
		t.Errorf("%d files to retry, want all %d", len(retry), len(files))
	}
	// Nothing went in: no file has a state that would make it look synced.
	if st := s.state(files[0]); st != nil {
		t.Errorf("state of a file the node never took: %+v", st)
	}
}

// TestDryRun: a dry run counts what it would send, and sends and writes
// nothing: no session, no state, no dead letter.
func TestDryRun(t *testing.T) {
	f := newFixture(t)
	sid, path := f.synced()
	write(t, path, entryLine("a0000003", "a0000002", "user", "more")+"\n")
	other := testutil.SessionID(t)
	write(t, filepath.Join(f.dir, "new.jsonl"), firstFlush(other))
	before, _ := os.ReadFile(f.state)
	o := f.options()
	o.DryRun = true
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sum := s.Summary(); sum.Imported != 1 || sum.Appended != 1 || sum.Files != 2 {
		t.Errorf("dry run: %+v", sum)
	}
	if after, _ := os.ReadFile(f.state); string(after) != string(before) {
		t.Error("a dry run wrote the state")
	}
	if _, err := f.c.Do(context.Background(), wire.GetRequest{SessionID: other}); !apiclient.IsStatus(err, 404) {
		t.Errorf("a dry run imported: %v", err)
	}
	if got := f.export(sid); got != firstFlush(sid) {
		t.Errorf("a dry run appended:\n%s", got)
	}
}

// TestRecoveredFile: pi resumed from an empty file writes the header at
// once, and at the first flush the header again with the backlog. The
// header alone is a session; the second header is pi's duplicate, left
// out; the backlog is appended.
func TestRecoveredFile(t *testing.T) {
	f := newFixture(t)
	sid := testutil.SessionID(t)
	path := filepath.Join(f.dir, "s.jsonl")
	write(t, path, "")
	if s := f.once(); s.Imported+s.Errors != 0 {
		t.Fatalf("empty file: %+v", s)
	}
	write(t, path, headerLine(sid)+"\n")
	if s := f.once(); s.Imported != 1 {
		t.Fatalf("header alone: %+v", s)
	}
	write(t, path, firstFlush(sid))
	if s := f.once(); s.Appended != 2 || s.Refused != 0 {
		t.Fatalf("the flush: %+v", s)
	}
	if got := f.export(sid); got != firstFlush(sid) {
		t.Errorf("export:\n%s", got)
	}
	if strings.Contains(f.warn.String(), "second session header") {
		t.Errorf("pi's duplicate header reported: %s", f.warn.String())
	}
}

// TestLargeOverNATS: a session larger than the NATS server's max_payload
// (256 KiB here) is imported as a head that fits plus appends, compared
// with the cluster from its entries when its export does not fit, and
// checked out the same way; every copy is the file byte for byte.
func TestLargeOverNATS(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{MaxPayload: 256 << 10})
	nc, err := apiclient.DialNATS(apiclient.NATSOptions{URL: n.NATSURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f := newFixture(t)
	f.c = nc
	sid := testutil.SessionID(t)
	path := SessionPath(f.dir, "/home/dev/app", "2026-11-30T08:51:24.934Z", sid)
	data := firstFlush(sid)
	parent := "a0000002"
	for k := range 200 {
		id := fmt.Sprintf("b%07d", k)
		data += entryLine(id, parent, "user", strings.Repeat("y", 2<<10)) + "\n"
		parent = id
	}
	write(t, path, data)
	if s := f.once(); s.Imported != 1 || s.Appended == 0 || s.Refused != 0 {
		t.Fatalf("first pass: %+v\n%s", s, f.warn)
	}
	full, err := exportOf(context.Background(), nc, sid)
	if err != nil || string(full) != data {
		t.Fatalf("export (put together from the entries: %d bytes, the file %d): %v", len(full), len(data), err)
	}
	// Without the state: the import is refused as existing, and the
	// comparison reads the session page by page.
	if err := os.Remove(f.state); err != nil {
		t.Fatal(err)
	}
	if s := f.once(); s.Imported+s.Appended+s.Refused+s.Conflicts != 0 || s.Known != 202 {
		t.Fatalf("second pass: %+v\n%s", s, f.warn)
	}
	out, err := Checkout(context.Background(), nc, sid, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); string(got) != data {
		t.Errorf("checkout over NATS: %d bytes, want %d", len(got), len(data))
	}
}

// TestSymlinkedDir: a sessions directory that is a symbolic link is synced
// where it points.
func TestSymlinkedDir(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.dir, "--home-dev-app--", "s.jsonl"), firstFlush(testutil.SessionID(t)))
	link := filepath.Join(t.TempDir(), "sessions")
	if err := os.Symlink(f.dir, link); err != nil {
		t.Skip(err)
	}
	f.dir = link
	if s := f.once(); s.Imported != 1 {
		t.Errorf("through the link: %+v", s)
	}
}

// TestNewSessionInFile: pi recovers a broken file by truncating it and
// starting a new session (a new id) at the same path; that session is
// imported on its own and the change is told.
func TestNewSessionInFile(t *testing.T) {
	f := newFixture(t)
	old, path := f.synced()
	sid := testutil.SessionID(t)
	if err := os.WriteFile(path, []byte(firstFlush(sid)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := f.once(); s.Imported != 1 || s.Conflicts != 0 {
		t.Fatalf("%+v", s)
	}
	if !strings.Contains(f.warn.String(), path+": now holds session "+sid+" (was "+old) {
		t.Errorf("warnings: %s", f.warn.String())
	}
	if f.export(old) != firstFlush(old) || f.export(sid) != firstFlush(sid) {
		t.Error("the two sessions are not both in the cluster")
	}
}

// lostReply applies the first import and then answers with an error, as a
// node that stored it but whose reply timed out.
// lostReply loses the reply to the first import the node applied, then
// answers the next failExports exports with a 503 (a node still catching
// up after its restart).
type lostReply struct {
	apiclient.Client
	mu          sync.Mutex
	lost        bool
	failExports int
}

func (c *lostReply) Do(ctx context.Context, req wire.Request) ([]byte, error) {
	c.mu.Lock()
	if _, ok := req.(wire.ExportRequest); ok && c.lost && c.failExports > 0 {
		c.failExports--
		c.mu.Unlock()
		return nil, &apiclient.Error{Op: "export", Status: http.StatusServiceUnavailable, ErrorDetail: wire.ErrorDetail{Message: "not caught up yet"}}
	}
	c.mu.Unlock()
	b, err := c.Client.Do(ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := req.(wire.ImportRequest); ok && err == nil && !c.lost {
		c.lost = true
		return nil, errors.New("no reply to pi.v1.import within 10s")
	}
	return b, err
}

// TestImportReplyLost: an import the node applied but did not answer is
// retried by the next pass, which finds the session (409) and tells it as
// imported, not as entries the cluster already had, also when the first
// comparison with the cluster's session failed; then new lines go on.
func TestImportReplyLost(t *testing.T) {
	f := newFixture(t)
	sid, path := testutil.SessionID(t), filepath.Join(f.dir, "s.jsonl")
	write(t, path, firstFlush(sid))
	o := f.options()
	o.Client = &lostReply{Client: f.c, failExports: 1}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if retry, _ := s.pass(context.Background(), []string{path}); len(retry) != 1 {
		t.Fatalf("the file whose import went unanswered is not retried: %v", retry)
	}
	// The retry's import finds the session (409), and the export that
	// compares it with the file fails: the next retry must still know
	// the import was this process's own.
	if retry, _ := s.pass(context.Background(), []string{path}); len(retry) != 1 {
		t.Fatalf("the file whose comparison failed is not retried: %v", retry)
	}
	write(t, path, entryLine("a0000003", "a0000002", "user", "and then?")+"\n")
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sum := s.Summary(); sum.Imported != 1 || sum.Appended != 1 || sum.Known != 0 || sum.Refused != 0 {
		t.Errorf("summary %+v: want 1 imported, 1 appended, none known", sum)
	}
	if got, want := f.export(sid), testutil.ReadFile(t, path); got != want {
		t.Errorf("export:\n%s\nwant the file:\n%s", got, want)
	}
	// A session another writer put there is still told as known.
	sid2, path2 := testutil.SessionID(t), filepath.Join(f.dir, "t.jsonl")
	write(t, path2, firstFlush(sid2))
	if _, err := f.c.Do(context.Background(), wire.ImportRequest{File: []byte(testutil.ReadFile(t, path2))}); err != nil {
		t.Fatal(err)
	}
	if sum := f.once(); sum.Imported != 0 || sum.Known != 2 {
		t.Errorf("a session imported by someone else: %+v, want 2 entries known", sum)
	}
}

// failing fails the next fail requests with err, then passes them on;
// it counts the requests it got while their context was live (a pass
// that stopped may still hand a worker a file, whose request a real
// client ends at once).
type failing struct {
	apiclient.Client
	mu       sync.Mutex
	fail     int
	err      error
	requests int
}

func (c *failing) Do(ctx context.Context, req wire.Request) ([]byte, error) {
	c.mu.Lock()
	if ctx.Err() == nil {
		c.requests++
	}
	if c.fail > 0 {
		c.fail--
		c.mu.Unlock()
		return nil, c.err
	}
	c.mu.Unlock()
	return c.Client.Do(ctx, req)
}

func (c *failing) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// TestOnceRetries: Once rides out a node that does not answer for a while
// (the first requests time out) and one that answers 503 for a file, which
// a pass does not stop for; every file is then in the cluster, once. With
// RetryFor 0 the first failure ends it, and a refused token is not retried.
func TestOnceRetries(t *testing.T) {
	timeout := &apiclient.UnreachableError{Where: "http://node", Err: errors.New("no reply in time"), Timeout: true}
	unavailable := &apiclient.Error{Op: "import", Status: 503, ErrorDetail: wire.ErrorDetail{Code: "unavailable", Message: "no stream leader"}}
	for _, c := range []struct {
		name string
		err  error
		fail int
	}{{"no reply", timeout, 3}, {"503", unavailable, 2}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			files := map[string]string{}
			for k := range 5 {
				sid := testutil.SessionID(t)
				files[sid] = filepath.Join(f.dir, fmt.Sprintf("%d.jsonl", k))
				write(t, files[sid], firstFlush(sid))
			}
			o := f.options()
			o.Client, o.RetryFor, o.Jobs = &failing{Client: f.c, fail: c.fail, err: c.err}, 30*time.Second, 2
			s, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Once(context.Background()); err != nil {
				t.Fatalf("Once: %v\n%s", err, f.warn.String())
			}
			if sum := s.Summary(); sum.Imported != 5 || sum.Known != 0 || sum.Refused != 0 {
				t.Errorf("summary %+v: want the 5 imported", sum)
			}
			for sid, path := range files {
				if f.export(sid) != testutil.ReadFile(t, path) {
					t.Errorf("%s: not in the cluster as written", path)
				}
			}
			if !strings.Contains(f.warn.String(), "not in the cluster yet") {
				t.Errorf("no retry told: %s", f.warn.String())
			}
		})
	}
	t.Run("give up", func(t *testing.T) {
		for _, c := range []struct {
			name     string
			err      error
			retryFor time.Duration
			requests int // one a pass: Jobs 1, and the failure stops the pass
		}{
			{"RetryFor 0", timeout, 0, 1},
			// Retried after 1 s; the next wait (2 s) would end past 2.5 s.
			{"RetryFor 2.5s", timeout, 2500 * time.Millisecond, 2},
			{"401", &apiclient.Error{Op: "import", Status: 401, ErrorDetail: wire.ErrorDetail{Code: "unauthorized", Message: "token refused"}}, time.Minute, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := newFixture(t)
				for k := range 3 {
					write(t, filepath.Join(f.dir, fmt.Sprintf("%d.jsonl", k)), firstFlush(testutil.SessionID(t)))
				}
				fc := &failing{Client: f.c, fail: 1000, err: c.err}
				o := f.options()
				o.Client, o.RetryFor, o.Jobs = fc, c.retryFor, 1
				s, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				// A clock that moves only by the waits: the retries counted
				// do not depend on how long a pass takes on a busy machine.
				clock := time.Unix(0, 0)
				s.now = func() time.Time { return clock }
				s.after = func(d time.Duration) <-chan time.Time {
					clock = clock.Add(d)
					ch := make(chan time.Time, 1)
					ch <- clock
					return ch
				}
				err = s.Once(context.Background())
				if err == nil || !errors.Is(err, c.err) || !strings.Contains(err.Error(), "3 files not in the cluster") {
					t.Errorf("Once: %v", err)
				}
				if n := fc.count(); n != c.requests {
					t.Errorf("%d requests, want %d", n, c.requests)
				}
				if s.Summary().Imported != 0 {
					t.Errorf("summary %+v", s.Summary())
				}
			})
		}
	})
}
