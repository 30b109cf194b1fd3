package service_test

import (
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
)

// engineTests run against every backend.
var engineTests = []struct {
	name string
	fn   func(*testing.T, backend)
}{
	{"ImportExportConformance", testImportExportConformance},
	{"ServiceErrors", testServiceErrors},
	{"ServiceAppend", testServiceAppend},
	{"AppendOrphans", testAppendOrphans},
	{"StoreRestart", testStoreRestart},
	{"EvictAndReload", testEvictAndReload},
	{"ChunkedImportAndPurge", testChunkedImportAndPurge},
	{"SnapshotRestore", testSnapshotRestore},
	{"SnapshotIgnoredWhenBad", testSnapshotIgnoredWhenBad},
	{"SnapshotEvictions", testSnapshotEvictions},
	{"SnapshotSealed", testSnapshotSealed},
	{"TailPurged", testTailPurged},
	{"ForksByReference", testForksByReference},
}

func memBackend(t *testing.T) backend {
	l := session.NewMemLog(1000, 8<<20)
	return backend{log: l, feed: l, cursors: session.NewMemCursors()}
}

func TestEngineMem(t *testing.T) {
	for _, tc := range engineTests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, memBackend(t)) })
	}
}

func jetStreamBackend(t *testing.T, syncAlways bool) backend {
	s := embeddedtest.RunServer(t, syncAlways)
	l, c := jstest.Backend(t, 1, s.ClientURL())
	return backend{log: l, feed: l, cursors: c, load: func(t *testing.T, files [][]byte) uint64 {
		sessions := map[string][]session.Record{}
		for _, f := range files {
			file, err := tree.Read(f, tree.ReadOptions{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			recs := []session.Record{{Type: "session", Data: file.Header.Raw}}
			for i := range file.Len() {
				e := file.Entry(i)
				recs = append(recs, session.Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw})
			}
			sessions[file.Header.ID] = recs
		}
		return jstest.BulkLoad(t, l.JetStream(), l, sessions)
	}}
}

func TestEngineJetStream(t *testing.T) {
	for _, tc := range engineTests {
		// sync: always costs an fsync per message (about 150 µs here): loading
		// 210,000 records for the restart test would take half a minute, and
		// durability is not what that test is about.
		syncAlways := tc.name != "StoreRestart"
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, jetStreamBackend(t, syncAlways)) })
	}
}

// TestEngineJetStreamR3 runs the concurrency tests on a 3-node cluster, where
// conflicts also come back as 10164 and reads must go to the leader.
func TestEngineJetStreamR3(t *testing.T) {
	servers := embeddedtest.RunCluster(t, 3, nil)
	urls := embeddedtest.URLs(servers)
	for _, tc := range engineTests {
		switch tc.name {
		case "ServiceAppend", "ChunkedImportAndPurge":
		default:
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			// Each test gets its own stream (names derived from the test) on the shared cluster.
			l, c := jstest.BackendNamed(t, 3, strings.NewReplacer("/", "_").Replace(t.Name()), urls...)
			tc.fn(t, backend{log: l, feed: l, cursors: c})
		})
	}
}
