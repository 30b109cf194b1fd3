package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

func TestArchiveFlags(t *testing.T) {
	c := DefaultConfig()
	env := map[string]string{"PI_NODE_SESSION_RETENTION": "720h", "PI_NODE_ARCHIVE_STREAM": "OLD_SESSIONS"}
	if err := c.ParseFlags([]string{"--archive-every", "1h"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if a := c.ArchiveConfig; a.SessionRetention != 720*time.Hour || a.ArchiveEvery != time.Hour || a.ArchiveStream != "OLD_SESSIONS" {
		t.Errorf("archive config %+v", a)
	}
	if d := DefaultConfig().ArchiveConfig; d.SessionRetention != 0 || d.ArchiveEvery != 10*time.Minute || d.ArchiveStream != "PI_ARCHIVE" {
		t.Errorf("defaults %+v: retention must be off", d)
	}
	for want, args := range map[string][]string{
		"--session-retention must not":                         {"--session-retention", "-1h"},
		"--archive-every must be":                              {"--archive-every", "0s"},
		"--archive-stream must be":                             {"--archive-stream", "a.b"},
		"--retention-policy and --session-retention: give one": {"--retention-policy", "p.json", "--session-retention", "1h"},
	} {
		c := DefaultConfig()
		if err := c.ParseFlags(args, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", args, err, want)
		}
	}
}

// --retention-policy is read at the start: a mistake stops it, naming the
// file and the field.
func TestRetentionPolicyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"tenants":[{"tenant":"a","cwdPrefix":"/a","deleteAfter":"30d"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"tenants":[{"tenant":"a","cwdPrefix":"/a","deleteAfter":"soon"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := ArchiveConfig{RetentionPolicy: good}
	if p, err := c.policies(); err != nil || p == nil || p.For("/a/b").DeleteAfter != 30*24*time.Hour {
		t.Errorf("good policy: %+v %v", p, err)
	}
	c.RetentionPolicy = bad
	if _, err := c.policies(); err == nil || !strings.Contains(err.Error(), "--retention-policy "+bad) || !strings.Contains(err.Error(), "tenants[0].deleteAfter") {
		t.Errorf("bad policy: %v, want the file and the field named", err)
	}
	c.RetentionPolicy = filepath.Join(dir, "missing.json")
	if _, err := c.policies(); err == nil || !strings.Contains(err.Error(), "--retention-policy") {
		t.Errorf("missing policy file: %v", err)
	}
}

// A node with a retention archives an idle session by itself and exports
// its counters; the archive operations answer over HTTP.
func TestMainArchives(t *testing.T) {
	m, logs := startNode(t, func(c *Config) {
		c.Sync = "interval"
		c.SessionRetention = 100 * time.Millisecond
		c.ArchiveEvery = 50 * time.Millisecond
	})
	closed := false
	defer func() {
		if !closed {
			m.Close(context.Background())
		}
	}()
	base := "http://" + m.HTTPAddr
	created := createSession(t, base)

	// Both waits share the 20 s.
	deadline := time.Now().Add(20 * time.Second)
	testutil.WaitFor(t, time.Until(deadline), func() error {
		var page struct {
			Sessions []struct {
				SessionID string `json:"sessionId"`
			} `json:"sessions"`
		}
		resp, err := http.Get(base + "/v1/archive")
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if len(page.Sessions) == 1 && page.Sessions[0].SessionID == created.SessionID {
			return nil
		}
		return fmt.Errorf("not archived: %d %+v\n%s", resp.StatusCode, page, logs.String())
	})
	// The copy is listed once stored; the counter moves when the pass has
	// purged the session too, a moment later.
	testutil.WaitFor(t, time.Until(deadline), func() error {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "pi_archive_sessions_archived_total 1") {
			return nil
		}
		return fmt.Errorf("metrics without the archiver's counter:\n%s", body)
	})
	closed = true
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
