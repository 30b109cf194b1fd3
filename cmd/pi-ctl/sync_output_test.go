package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/pisync"
)

// TestSyncProgress: on a terminal the bar is redrawn in place and cleared
// for a warning; elsewhere a long pass prints a plain line now and then,
// and a short one prints nothing.
func TestSyncProgress(t *testing.T) {
	var buf bytes.Buffer
	o := &syncOutput{e: &env{stderr: &buf}, bar: true}
	o.progress(pisync.Progress{Done: 5, Total: 10, Bytes: 2048, Imported: 5, Elapsed: time.Second, First: true})
	if got := buf.String(); !strings.HasPrefix(got, "\r[###############") || !strings.Contains(got, "5/10 files, 2.0 KiB, 5 sessions/s") {
		t.Errorf("bar: %q", got)
	}
	buf.Reset()
	o.warn("f.jsonl:3: refused")
	if got := buf.String(); got != "\r\x1b[Kpi-ctl sync: f.jsonl:3: refused\n" {
		t.Errorf("warning over the bar: %q", got)
	}

	buf.Reset()
	o = &syncOutput{e: &env{stderr: &buf}}
	o.progress(pisync.Progress{Done: 1, Total: 10, Elapsed: time.Second, First: true})
	if buf.Len() != 0 {
		t.Errorf("a short pass printed %q", buf.String())
	}
	o.progress(pisync.Progress{Done: 9000, Total: 10000, Bytes: 5 << 20, Imported: 9000, Elapsed: 6 * time.Second, First: true})
	o.progress(pisync.Progress{Done: 9001, Total: 10000, Bytes: 5 << 20, Imported: 9001, Elapsed: 6 * time.Second, First: true})
	if got := buf.String(); got != "pi-ctl sync: 9000/10000 files, 5.0 MiB, 1500 sessions/s\n" {
		t.Errorf("plain progress: %q", got)
	}
	// A watch's later passes are not shown.
	buf.Reset()
	o = &syncOutput{e: &env{stderr: &buf}, bar: true}
	o.progress(pisync.Progress{Done: 1, Total: 1, Elapsed: time.Millisecond})
	if buf.Len() != 0 {
		t.Errorf("a later pass drew %q", buf.String())
	}
}
