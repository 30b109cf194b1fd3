package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A key file that is too short stops the start with an error naming the
// flag and the file; nothing is written.
func TestEncryptionKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for flag, tune := range map[string]func(*Config){
		"--encryption-key-file": func(c *Config) { c.EncryptionKeyFile = short },
		"--previous-encryption-key-file": func(c *Config) {
			c.EncryptionKeyFile = filepath.Join(dir, "good.key")
			c.PreviousEncryptionKeyFile = short
		},
	} {
		if err := os.WriteFile(filepath.Join(dir, "good.key"), []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		c.DataDir = filepath.Join(t.TempDir(), "data")
		c.HTTPListen, c.ClientListen = "127.0.0.1:0", "127.0.0.1:0"
		c.LogOutput = &strings.Builder{}
		tune(&c)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := Open(ctx, c)
		cancel()
		if err == nil {
			_ = m.Close(context.Background())
			t.Fatalf("%s: a 16-byte key accepted", flag)
		}
		if !strings.Contains(err.Error(), flag+": key file "+short) || !strings.Contains(err.Error(), "at least 32") {
			t.Errorf("%s: %v, want an error naming the flag, the file and the minimum", flag, err)
		}
		if _, err := os.Stat(c.DataDir); err == nil {
			t.Errorf("%s: the data dir was created before the key was checked", flag)
		}
	}
}

// checkClusterStore tells a cluster member's data dir written in the
// clear from an encrypted one by the meta layer's key file.
func TestCheckClusterStore(t *testing.T) {
	plainDir, keyedDir, newDir := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{plainDir, keyedDir} {
		if err := os.MkdirAll(filepath.Join(d, "jetstream", "$SYS", "_js_", "_meta_"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(keyedDir, "jetstream", "$SYS", "_js_", "_meta_", "meta.key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, key, prev, cluster, want string
	}{
		{plainDir, "k", "", "c", "cannot encrypt a cluster member's data dir in place"},
		{keyedDir, "", "", "c", "is encrypted: start this node with its --encryption-key-file"},
		{keyedDir, "k", "p", "c", "cannot rotate a cluster member's key in place"},
		{keyedDir, "k", "", "c", ""},
		{plainDir, "", "", "c", ""},
		{newDir, "k", "p", "c", ""},  // a new member: nothing to convert
		{plainDir, "k", "p", "", ""}, // a single server does both in place
	}
	for _, tc := range cases {
		c := Config{DataDir: tc.dir, EncryptionKeyFile: tc.key, PreviousEncryptionKeyFile: tc.prev, ClusterName: tc.cluster}
		err := c.checkClusterStore()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc, err, tc.want)
		}
	}
}
