//go:build linux

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// piFile returns a pi v3 session file of n entries, as pi writes it: a
// chain of messages (with a branch every 100), so larger than one atomic
// batch when n is over 999.
func piFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	sid := u.String()
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-12-01T10:00:00.000Z","cwd":"/work/import"}`+"\n", sid)
	for i := range n {
		parent := "null"
		switch {
		case i > 0 && i%100 == 0:
			parent = fmt.Sprintf(`"%08x"`, i-2) // a branch
		case i > 0:
			parent = fmt.Sprintf(`"%08x"`, i-1)
		}
		extra := "" // an assistant message names its model, as pi's do
		role := "user"
		if i%2 == 1 {
			role, extra = "assistant", `,"api":"openai-completions","provider":"fake","model":"echo","stopReason":"stop"`
		}
		fmt.Fprintf(&b, `{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-12-01T10:00:%02d.000Z","message":{"role":%q,"content":[{"type":"text","text":"entry %d %s"}]%s,"timestamp":%d}}`+"\n",
			i, parent, i%60, role, i, strings.Repeat("x", i%50), extra, 1764583200000+i)
	}
	return sid, b.Bytes()
}

// startSingleNode starts one pi-node with its own JetStream (R1); extra
// flags are appended.
func startSingleNode(t *testing.T, extra ...string) *piNode {
	t.Helper()
	ports := testutil.FreePorts(t, 2)
	dataDir := t.TempDir()
	nd := &piNode{name: "solo", base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		natsURL: fmt.Sprintf("nats://127.0.0.1:%d", ports[1]), dataDir: dataDir}
	args := append([]string{"--node-name", "solo", "--data-dir", dataDir,
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--shutdown-grace", "10s"}, extra...)
	nd.Proc = proctest.New(t, "solo", piNodeBin, args...)
	nd.Start(t)
	nd.waitReady(t)
	return nd
}

// importWait is how long the nodes of TestImportThenExport wait for their
// Store to apply what they acknowledged (--min-seq-timeout), and its
// client waits longer: the test is of the wait, not of how fast a loaded
// machine applies 5,000 entries. With the defaults (the node's 5 s, the
// probe client's 5 s) an export under CI's load timed out in the client
// before the node answered.
var importWait = testutil.Scale(30 * time.Second)

// TestImportThenExport: a pi file of several atomic batches, imported
// through a node and exported from the same node at once, without minSeq,
// comes back byte for byte — on one node and on each node of three (the
// node waits for the import it acknowledged before it answers).
func TestImportThenExport(t *testing.T) {
	skipShort(t)
	t.Parallel()
	client := &http.Client{Timeout: 2 * importWait}
	do := func(t *testing.T, method, url string, body []byte, want int) ([]byte, http.Header) {
		t.Helper()
		st, hdr, data, err := proctest.Do(context.Background(), client, method, url, body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		if st != want {
			t.Fatalf("%s %s: %d, want %d: %s (Pi-Applied-Seq %s, Pi-Lag %s)", method, url, st, want, data, hdr.Get("Pi-Applied-Seq"), hdr.Get("Pi-Lag"))
		}
		return data, hdr
	}
	check := func(t *testing.T, nd *piNode, n int) {
		sid, file := piFile(t, n)
		start := time.Now()
		res, _ := do(t, "POST", nd.base+"/v1/import", file, 201)
		if !bytes.Contains(res, []byte(`"skipped":[]`)) {
			t.Fatalf("%s: the import skipped lines of a valid file: %s", nd.name, res)
		}
		imported := time.Now()
		got, hdr := do(t, "GET", nd.base+"/v1/sessions/"+sid+"/export", nil, 200)
		t.Logf("MEASURED %s: import of %d entries %v, export right after %v", nd.name, n,
			imported.Sub(start).Round(time.Millisecond), time.Since(imported).Round(time.Millisecond))
		if !bytes.Equal(got, file) {
			t.Fatalf("%s: export right after import differs: %d bytes (%d lines), want %d (%d lines); Pi-Applied-Seq %s, Pi-Lag %s",
				nd.name, len(got), bytes.Count(got, []byte("\n")), len(file), bytes.Count(file, []byte("\n")), hdr.Get("Pi-Applied-Seq"), hdr.Get("Pi-Lag"))
		}
		if hdr.Get("Pi-Lag") == "" || hdr.Get("Pi-Applied-Seq") == "" {
			t.Fatalf("%s: export without freshness headers: %v", nd.name, hdr)
		}
	}
	t.Run("OneNode", func(t *testing.T) {
		nd := startSingleNode(t, "--min-seq-timeout", importWait.String())
		for _, n := range []int{5021, 4000} {
			check(t, nd, n)
		}
	})
	t.Run("ThreeNodes", func(t *testing.T) {
		for _, nd := range startEmbeddedClusterWith(t, 3, "--min-seq-timeout", importWait.String()) {
			check(t, nd, 5021)
		}
	})
}
