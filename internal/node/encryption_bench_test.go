package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// BenchmarkEncryptionCost weighs encryption at rest against the same node
// without it, in the same run: one node (its embedded server, sync
// always), 16 writers appending 1 KiB entries over HTTP, each naming its
// client and its parent as a fleet worker does; then the Store's rebuild
// from the log (its snapshot removed: JetStream's blocks decrypted), and
// the search index after a restart (on disk it resumes; encrypted, it is
// in memory and indexes the log again). Metrics are the encrypted node's
// rate over the plain one's; appends are also weighed with both indexes in
// memory (--snapshot-interval 0), the cipher's cost alone.
//
//	go test -run '^$' -bench EncryptionCost -benchtime 3x ./internal/node
func BenchmarkEncryptionCost(b *testing.B) {
	key := filepath.Join(b.TempDir(), "k")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		b.Fatal(err)
	}
	const writers, perWriter = 16, 400
	type figures struct{ appends, memAppends, rebuild, reindex float64 }
	var plain, enc figures
	order := []bool{false, true}
	for b.Loop() {
		// Each iteration in the other order: neither side always runs
		// first (a fresh disk, a cold page cache).
		order[0], order[1] = order[1], order[0]
		for _, encrypted := range order {
			f := &plain
			c := DefaultConfig()
			if encrypted {
				f, c.EncryptionKeyFile = &enc, key
			}
			c.DataDir = b.TempDir()
			c.HTTPListen, c.ClientListen = "127.0.0.1:0", "127.0.0.1:0"
			c.LogOutput = io.Discard
			m := openBench(b, c)
			start := time.Now()
			last := appendLoad(b, "http://"+m.HTTPAddr, writers, perWriter)
			f.appends += float64(writers*perWriter) / time.Since(start).Seconds()
			closeBench(b, m)

			// The same with both indexes in memory (no snapshots: the
			// index then lives in memory on a plain node too), so that the
			// index's own fsyncs on disk weigh on neither side: the
			// cipher's cost alone.
			mc := c
			mc.DataDir, mc.SnapshotInterval = b.TempDir(), 0
			m = openBench(b, mc)
			start = time.Now()
			appendLoad(b, "http://"+m.HTTPAddr, writers, perWriter)
			f.memAppends += float64(writers*perWriter) / time.Since(start).Seconds()
			closeBench(b, m)

			if err := os.RemoveAll(filepath.Join(c.DataDir, storeDir(0))); err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			m = openBench(b, c)
			waitStatus(b, "http://"+m.HTTPAddr, func(s wire.StatusReply) bool { return s.Store.Applied >= last })
			f.rebuild += float64(last) / time.Since(start).Seconds()
			closeBench(b, m)

			start = time.Now()
			m = openBench(b, c)
			waitStatus(b, "http://"+m.HTTPAddr, func(s wire.StatusReply) bool {
				return s.Store.Search != nil && s.Store.Search.CaughtUp && s.Store.Search.Applied >= last
			})
			f.reindex += float64(last) / time.Since(start).Seconds()
			closeBench(b, m)
		}
	}
	b.ReportMetric(plain.appends/float64(b.N), "plain-appends/s")
	b.ReportMetric(enc.appends/plain.appends, "appends-ratio")
	b.ReportMetric(enc.memAppends/plain.memAppends, "appends-ratio-index-in-memory")
	b.ReportMetric(plain.rebuild/float64(b.N), "plain-rebuild-records/s")
	b.ReportMetric(enc.rebuild/plain.rebuild, "rebuild-ratio")
	b.ReportMetric(plain.reindex/float64(b.N), "plain-restart-search-records/s")
	b.ReportMetric(enc.reindex/plain.reindex, "restart-search-ratio")
}

func openBench(b *testing.B, c Config) *Node {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := Open(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func closeBench(b *testing.B, m *Node) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// appendLoad has each writer create a session and append perWriter 1 KiB
// entries to it, each naming the writer's client and the previous entry;
// it returns the log's last sequence.
func appendLoad(b *testing.B, base string, writers, perWriter int) uint64 {
	b.Helper()
	pad := strings.Repeat("x", 900)
	var mu sync.Mutex
	var last uint64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			sid := testutil.SessionID(b)
			hdr := fmt.Sprintf(`{"header":{"type":"session","version":3,"id":%q,"timestamp":"2026-12-07T00:00:00.000Z","cwd":"/bench"},"entries":[]}`, sid)
			if _, err := post(base+"/v1/sessions", []byte(hdr), http.StatusCreated); err != nil {
				errs <- err
				return
			}
			parent := "null"
			for i := range perWriter {
				id := fmt.Sprintf("%02x%06x", w, i)
				body := fmt.Sprintf(`{"client":"w%d","entries":[{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-07T00:00:01.000Z","message":{"role":"user","content":"%s %d","timestamp":1}}]}`, w, id, parent, pad, i)
				data, err := post(base+"/v1/sessions/"+sid+"/entries", []byte(body), http.StatusOK)
				if err != nil {
					errs <- err
					return
				}
				var wr struct {
					LastSeq uint64 `json:"lastSeq"`
				}
				_ = json.Unmarshal(data, &wr)
				mu.Lock()
				last = max(last, wr.LastSeq)
				mu.Unlock()
				parent = fmt.Sprintf("%q", id)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return last
}

// benchClient keeps a connection per writer (the default transport keeps
// two per host: the others would dial for every append).
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func post(url string, body []byte, want int) ([]byte, error) {
	resp, err := benchClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	return data, nil
}

func waitStatus(b *testing.B, base string, ok func(wire.StatusReply) bool) {
	b.Helper()
	testutil.WaitFor(b, 5*time.Minute, func() error {
		resp, err := http.Get(base + "/v1/status")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var s wire.StatusReply
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			return err
		}
		if !ok(s) {
			return fmt.Errorf("status: %+v", s.Store)
		}
		return nil
	})
}
