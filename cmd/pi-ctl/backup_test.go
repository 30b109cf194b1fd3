package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestBackupCommands: backup --dated --keep on a real server keeps the
// newest N finished backups and nothing else it did not make; restore
// into another server gives back the sessions and cursors, refuses a
// server that holds data unless --force, and replaces it with --force.
func TestBackupCommands(t *testing.T) {
	ctx := context.Background()
	srv := embeddedtest.RunServer(t, false)
	l, cur := jstest.Backend(t, 1, srv.ClientURL())
	sid := testutil.SessionID(t)
	hdr := session.Record{Type: "session", Data: []byte(`{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-12-02T00:00:00.000Z","cwd":"/b"}`)}
	ent := session.Record{Type: "message", ID: "aa000001", Data: []byte(`{"type":"message","id":"aa000001","parentId":null,"timestamp":"2026-12-02T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`)}
	seqs, err := l.Append(ctx, sid, 0, []session.Record{hdr, ent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cur.Put(ctx, sid, "w1", session.Cursor{LeafID: "aa000001", Seq: seqs[1], UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	foreign := filepath.Join(root, "keep-me")
	unfinished := filepath.Join(root, "20000101T000000Z")
	for _, d := range []string{foreign, unfinished} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var dirs []string
	for range 3 {
		var rep struct {
			Dir     string   `json:"dir"`
			Removed []string `json:"removed"`
		}
		out := mustRun(t, "backup", "--dated", "--keep", "2", root, "--server", srv.ClientURL(), "--json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, rep.Dir)
		// Names are to the second: the next backup must get another one.
		testutil.WaitFor(t, 2*time.Second, func() error {
			if _, err := os.Stat(filepath.Join(root, dateName())); err == nil {
				return os.ErrExist
			}
			return nil
		})
	}
	ents, _ := os.ReadDir(root)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{filepath.Base(dirs[1]), filepath.Base(dirs[2]), "keep-me"}
	if !slices.Equal(left, want) {
		t.Fatalf("after 3 backups with --keep 2: %v, want %v", left, want)
	}

	// Restore into an empty server, and the refusal of one with data.
	other := embeddedtest.RunServer(t, false)
	out := mustRun(t, "restore", dirs[2], "--server", other.ClientURL())
	for _, s := range []string{"KV_PI_CURSORS", "PI_SESSIONS", "restored 2 streams"} {
		if !strings.Contains(out, s) {
			t.Errorf("restore said:\n%s\nwant %q", out, s)
		}
	}
	l2, cur2 := jstest.Backend(t, 1, other.ClientURL()) // provisioning finds the restored streams
	got, err := l2.Read(ctx, sid, 0)
	if err != nil || len(got) != 2 || string(got[1].Data) != string(ent.Data) || got[1].Seq != seqs[1] {
		t.Fatalf("restored session: %+v, %v", got, err)
	}
	if c, err := cur2.Get(ctx, sid, "w1"); err != nil || c.LeafID != "aa000001" {
		t.Fatalf("restored cursor: %+v, %v", c, err)
	}
	r := runCLI(t, "", "restore", dirs[2], "--server", other.ClientURL())
	if r.code != 1 || !strings.Contains(r.stderr, "PI_SESSIONS has 2 messages") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("restore into a server with data: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := l2.Append(ctx, sid, seqs[1], []session.Record{{Type: "message", ID: "aa000002", Parent: "aa000001",
		Data: []byte(`{"type":"message","id":"aa000002","parentId":"aa000001","timestamp":"2026-12-02T00:00:02.000Z","message":{"role":"user","content":"again","timestamp":2}}`)}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "restore", dirs[2], "--force", "--server", other.ClientURL())
	if got, err := l2.Read(ctx, sid, 0); err != nil || len(got) != 2 {
		t.Fatalf("after restore --force: %d records, %v; want the backup's 2", len(got), err)
	}
}

// TestBackupEncrypted: a backup with --encrypt-key-file holds no session's
// text in any file; restore refuses it without the key and with another
// key — before touching the server — and restores it with the key.
func TestBackupEncrypted(t *testing.T) {
	ctx := context.Background()
	srv := embeddedtest.RunServer(t, false)
	l, _ := jstest.Backend(t, 1, srv.ClientURL())
	sid := testutil.SessionID(t)
	const marker = "MARKER-backup-5c1e"
	hdr := session.Record{Type: "session", Data: []byte(`{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-12-02T00:00:00.000Z","cwd":"/b"}`)}
	ent := session.Record{Type: "message", ID: "aa000001", Data: []byte(`{"type":"message","id":"aa000001","parentId":null,"timestamp":"2026-12-02T00:00:01.000Z","message":{"role":"user","content":"` + marker + `","timestamp":1}}`)}
	if _, err := l.Append(ctx, sid, 0, []session.Record{hdr, ent}); err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	key, other := filepath.Join(keys, "k"), filepath.Join(keys, "o")
	os.WriteFile(key, []byte(strings.Repeat("k", 64)), 0o600)
	os.WriteFile(other, []byte(strings.Repeat("o", 64)), 0o600)

	plainDir, dir := filepath.Join(t.TempDir(), "plain"), filepath.Join(t.TempDir(), "sealed")
	mustRun(t, "backup", plainDir, "--server", srv.ClientURL())
	mustRun(t, "backup", dir, "--encrypt-key-file", key, "--server", srv.ClientURL())
	holding := func(d string) []string {
		var found []string
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(d, e.Name()))
			if strings.HasSuffix(e.Name(), ".tar.s2") {
				// A plain snapshot is s2-compressed: whether the marker
				// stays a literal in it depends on what precedes it
				// (random ids), so it is looked for in the content.
				if b, _ = io.ReadAll(s2.NewReader(bytes.NewReader(b))); len(b) == 0 {
					t.Fatalf("%s: not an s2 stream", e.Name())
				}
			}
			if strings.Contains(string(b), marker) {
				found = append(found, e.Name())
			}
		}
		return found
	}
	if len(holding(plainDir)) == 0 {
		t.Fatal("the plain backup does not hold the marker: this test could not fail")
	}
	if found := holding(dir); len(found) != 0 {
		t.Fatalf("encrypted backup: %v hold the marker", found)
	}
	man, err := readManifest(dir)
	if err != nil || !man.Encrypted || man.Format != 2 || !strings.HasSuffix(man.Streams[1].File, ".tar.s2.sealed") {
		t.Fatalf("manifest: %+v %v", man, err)
	}

	target := embeddedtest.RunServer(t, false)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "is an encrypted backup: give --decrypt-key-file"},
		{[]string{"--decrypt-key-file", other}, "is not the one the backup was made with"},
	} {
		r := runCLI(t, "", append([]string{"restore", dir, "--server", target.ClientURL()}, tc.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Fatalf("restore %v: exit %d, stderr %q, want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if r := runCLI(t, "", "restore", plainDir, "--decrypt-key-file", key, "--server", target.ClientURL()); r.code != 1 || !strings.Contains(r.stderr, "is not encrypted") {
		t.Fatalf("restore of a plain backup with a key: exit %d, stderr %q", r.code, r.stderr)
	}
	conn := jstest.Connect(t, target.ClientURL())
	var left []string
	for name := range conn.JS.StreamNames(ctx).Name() {
		left = append(left, name)
	}
	if len(left) != 0 {
		t.Fatalf("refused restores left streams: %v", left)
	}
	mustRun(t, "restore", dir, "--decrypt-key-file", key, "--server", target.ClientURL())
	l2, _ := jstest.Backend(t, 1, target.ClientURL())
	got, err := l2.Read(ctx, sid, 0)
	if err != nil || len(got) != 2 || string(got[1].Data) != string(ent.Data) {
		t.Fatalf("restored session: %+v, %v", got, err)
	}
}

func dateName() string { return time.Now().UTC().Format(datedLayout) }

// TestBackupRefusals: what backup and restore refuse without a server.
func TestBackupRefusals(t *testing.T) {
	empty := t.TempDir()
	notBackup := t.TempDir()
	if err := os.WriteFile(filepath.Join(notBackup, "manifest.json"), []byte(`{"format":9}`), 0o600); err != nil {
		t.Fatal(err)
	}
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"backup"}, 2, "DIR"},
		{[]string{"backup", empty, "--keep", "3"}, 2, "--keep N (N ≥ 1) goes with --dated"},
		{[]string{"backup", used}, 1, "is not empty"},
		{[]string{"backup", empty, "--user", "a", "--password", "p", "--password-file", pw}, 2, "give one"},
		{[]string{"backup", empty, "--user", "a", "--password-file", pw}, 1, "is empty"},
		{[]string{"restore", empty}, 1, "has no manifest.json: not a backup, or an unfinished one"},
		{[]string{"restore", notBackup}, 1, "format 9 (encrypted: false); this pi-ctl reads formats 1 (plain) and 2 (encrypted)"},
		{[]string{"backup", empty, "--encrypt-key-file", pw}, 1, "--encrypt-key-file: key file " + pw + ": the key is 0 bytes, want at least 32"},
		{[]string{"restore", empty, "--replicas", "9"}, 2, "--replicas must be 1 to 5"},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || len(lines(r.stderr)) != 1 {
			t.Errorf("pi-ctl %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
		}
	}
}
