package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/nodetest"
)

var update = flag.Bool("update", false, "rewrite testdata/agent.golden")

// TestAgent runs the example against an in-process pi-node, through its
// HTTP API and on its JetStream directly, and checks what it prints
// against testdata/agent.golden (ids and addresses normalized; regenerate
// with -update and review the diff). Each run gets a fresh node, so the
// log sequences it prints are those of an empty log.
func TestAgent(t *testing.T) {
	golden := filepath.Join("testdata", "agent.golden")
	for _, transport := range []string{"http", "nats"} {
		t.Run(transport, func(t *testing.T) {
			n := nodetest.Start(t, nodetest.Options{Token: "t0ken"})
			url := map[string]string{"http": n.HTTPURL, "nats": n.NATSURL}[transport]
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, []string{"--" + transport, url, "--token", n.Token, "--client", "worker-7"}, &out, &out); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			got := normalize(out.String(), url)
			if *update && transport == "http" {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (go test -update to rewrite it):\n%s", golden, got)
			}
		})
	}
}

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	entryRE = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	viaRE   = regexp.MustCompile(`via \S+( \(JetStream\))?,`)
)

// normalize replaces what differs from run to run: the session id, entry
// ids (numbered by first appearance) and the node's address.
func normalize(s, url string) string {
	s = viaRE.ReplaceAllString(s, "via <node>,")
	s = uuidRE.ReplaceAllString(s, "<session>")
	ids := map[string]string{}
	return entryRE.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("<e%d>", len(ids)+1)
		}
		return ids[id]
	})
}

// TestFlags: a bad flag is an error, --help is not a failure to report.
func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--bogus"}, &out, &out); err == nil || !bytes.Contains(out.Bytes(), []byte("Usage of agent")) {
		t.Errorf("--bogus: %v", err)
	}
	if err := run(context.Background(), []string{"--http", "ftp://x"}, &out, &out); err == nil {
		t.Error("an ftp URL was accepted")
	}
}
