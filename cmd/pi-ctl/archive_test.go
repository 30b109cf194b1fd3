package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// archivedPage is the JSON of archive ls.
type archivedPage struct {
	Sessions []wire.ArchivedSession `json:"sessions"`
	Next     string                 `json:"next"`
}

// The real pi-node with a retention archives idle sessions by itself; the
// archive commands list them over both transports, refuse a restore inside
// the log's duplicate window, and report usage errors.
func TestArchiveCommands(t *testing.T) {
	_, vs := v3Vectors(t)
	n := startNode(t, "archive", "", "--session-retention", "300ms", "--archive-every", "100ms")
	// A node archiving every 100 ms under -race on a loaded machine took
	// over pi-ctl's default 10 s to answer an import (CI: "no reply in
	// time (raise --timeout if the node is busy)"): as the message says.
	conn := []string{"--http", n.httpURL, "--timeout", testutil.Scale(time.Minute).String()}
	want := map[string]bool{}
	for _, v := range vs[:3] {
		mustRun(t, withFlags(conn, "import", v.file)...)
		want[v.sid] = true
	}
	// A copy is listed as soon as it is stored, and the session leaves
	// the log a moment later: wait for both.
	var page archivedPage
	testutil.WaitFor(t, 30*time.Second, func() error {
		page = archivedPage{}
		mustJSON(t, mustRun(t, withFlags(conn, "archive", "ls", "--all", "--json")...), &page)
		var live listPage
		mustJSON(t, mustRun(t, withFlags(conn, "ls", "--all", "--json")...), &live)
		ok := len(page.Sessions) == len(want) && len(live.Sessions) == 0
		for _, s := range page.Sessions {
			if s.Live { // archive ls ran before the purge that ls then saw
				ok = false
			}
		}
		if !ok {
			return errors.New("the periodic pass to archive the imported sessions; " + n.logTail())
		}
		return nil
	})
	for _, s := range page.Sessions {
		if !want[s.SessionID] || s.Live || s.Bytes == 0 || s.Parts != 1 || len(s.Month) != 6 {
			t.Errorf("listed %+v", s)
		}
	}
	first := page.Sessions[0]
	for name, c := range transports(n) {
		out := mustRun(t, withFlags(c, "archive", "ls", "--month", first.Month)...)
		if !strings.HasPrefix(out, "ID") || !strings.Contains(out, first.SessionID) {
			t.Errorf("%s: archive ls --month %s:\n%s", name, first.Month, out)
		}
	}
	if out := mustRun(t, withFlags(conn, "archive", "ls", "--month", "199901")...); lineCount(out) != 1 {
		t.Errorf("another month:\n%s", out)
	}

	r := runCLI(t, "", withFlags(conn, "archive", "restore", first.SessionID)...)
	if r.code != 1 || !strings.Contains(r.stderr, "restore it after") {
		t.Errorf("restore inside the duplicate window: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, "", withFlags(conn, "archive", "restore", uuid.Must(uuid.NewV7()).String())...)
	if r.code != 1 || !strings.Contains(r.stderr, "no copy") {
		t.Errorf("restore of a session never archived: exit %d, stderr %q", r.code, r.stderr)
	}
	out := mustRun(t, withFlags(conn, "archive", "now", "--older-than", "1h")...)
	if !strings.Contains(out, "archived   0 ") {
		t.Errorf("archive now with nothing idle:\n%s", out)
	}
	for _, args := range [][]string{{"archive", "ls", "--month", "2026-11"}, {"archive", "restore"}, {"archive", "now", "--older-than", "-1h"}, {"archive", "nope"}} {
		if r := runCLI(t, "", withFlags(conn, args...)...); r.code != 2 {
			t.Errorf("pi-ctl %v: exit %d, want 2 (usage); stderr %q", args, r.code, r.stderr)
		}
	}
}

// archiveNode is pi-node's API with an archive, in this process, on a log
// whose duplicate window is short (100 ms, not 2 minutes), so that a test
// can restore what it has just archived.
func archiveNode(t *testing.T) (httpURL, natsURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := embeddedtest.RunServer(t, false)
	c := jstest.Connect(t, srv.ClientURL())
	cfg := jetstream.NewConfig()
	cfg.Duplicates = 100 * time.Millisecond
	if err := jetstream.Provision(ctx, c.JS, cfg); err != nil {
		t.Fatal(err)
	}
	log := jetstream.NewLog(c.JS, cfg)
	cursors, err := jetstream.NewCursors(ctx, c.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(log, store.Options{})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := archive.New(st, log, jetstream.NewArchive(log, jetstream.NewArchiveConfig(cfg)), archive.Options{Node: "t"})
	s, err := api.New(api.Config{Service: &service.Service{Log: log, Store: st, Cursors: cursors}, Archive: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.StartNATS(c.NC); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, srv.ClientURL()
}

// The whole cycle through pi-ctl: archive now, export refused, restore
// over NATS once the duplicate window is over, export byte for byte.
func TestArchiveRestoreCycle(t *testing.T) {
	_, vs := v3Vectors(t)
	v := vs[1]
	httpURL, natsURL := archiveNode(t)
	h, nats := []string{"--http", httpURL}, []string{"--server", natsURL}
	var imp importResult
	mustJSON(t, mustRun(t, withFlags(h, "import", v.file, "--json")...), &imp)
	if imp.Result != "ok" {
		t.Fatalf("import: %+v", imp)
	}

	// The pass archives what the node's Store holds, which applies the
	// import a moment after its reply: --min-seq makes the node wait for it.
	var pass wire.ArchivePass
	mustJSON(t, mustRun(t, withFlags(h, "archive", "now", "--older-than", "0s", "--json", "--min-seq", jsonNum(imp.LastSeq))...), &pass)
	if pass.Archived != 1 || pass.Failed != 0 {
		t.Fatalf("archive now: %+v", pass)
	}
	if r := runCLI(t, "", withFlags(h, "export", v.sid)...); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("export of an archived session: exit %d, stderr %q", r.code, r.stderr)
	}
	var res restoreResult
	testutil.WaitFor(t, 10*time.Second, func() error {
		r := runCLI(t, "", withFlags(nats, "archive", "restore", v.sid, "--json")...)
		res = restoreResult{}
		mustJSON(t, r.stdout, &res)
		if r.code != 0 {
			return errors.New("a restore once the duplicate window is over: " + res.Error)
		}
		return nil
	})
	if res.Result != "restored" || res.SessionID != v.sid || res.LastSeq == 0 {
		t.Errorf("restore: %+v", res)
	}
	ms := []string{"--min-seq", jsonNum(res.LastSeq)}
	if got := mustRun(t, withFlags(append(h, ms...), "export", v.sid)...); got != expectedExport(t, v.data) {
		t.Errorf("export after the restore differs from the file:\n%s", got)
	}
	var page archivedPage
	mustJSON(t, mustRun(t, withFlags(h, "archive", "ls", "--json")...), &page)
	if len(page.Sessions) != 0 {
		t.Errorf("the archive keeps %d copies after the restore", len(page.Sessions))
	}
}
