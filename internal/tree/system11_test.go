package tree_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// TestSystemMessageAt: every compaction pi 1.1 wrote carries, byte for
// byte, the checkpoint SystemMessageAt computes at its parent with its
// time, and none where it computes none.
func TestSystemMessageAt(t *testing.T) {
	dir := filepath.Join(conformance.Dir(t), "pi-v3-1.1")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no pi 1.1.0 vectors: %v", err)
	}
	with, without := 0, 0
	for _, c := range conformance.Cases(t, conformance.Dir(t), "pi-v3-1.1") {
		data, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if err != nil {
			continue
		}
		f, err := tree.Read(data, tree.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Len() {
			e := f.Entry(i)
			if e.Kind != tree.KindCompaction {
				continue
			}
			v, err := jsjson.ParseValue(e.Raw)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			if m, ok := v.Get("systemMessage"); ok {
				want = m.AppendJSON(nil)
				with++
			} else {
				without++
			}
			parent, _ := f.Index(e.ParentID)
			if e.ParentID == "" {
				parent = -1
			}
			ms, _ := e.TimeMillis()
			if got := f.SystemMessageAt(parent, ms); !bytes.Equal(got, want) {
				t.Errorf("%s: compaction %s:\n got %.300s\nwant %.300s", filepath.Base(c), e.ID, got, want)
			}
		}
	}
	if with < 20 || without < 5 {
		t.Fatalf("only %d compactions with a checkpoint and %d without", with, without)
	}
	t.Logf("%d checkpoints reproduced, %d compactions without one", with, without)
}
