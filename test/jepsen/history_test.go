//go:build linux

package jepsen

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Kind is what an operation does.
type Kind string

const (
	KindCreate Kind = "create"
	KindAppend Kind = "append"
	KindRead   Kind = "read"
)

// Outcome is how an operation ended; see the package documentation.
type Outcome string

const (
	OK      Outcome = "ok"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
)

// Entry is one entry as a read saw it; Seq is 0 when the read does not say
// (export).
type Entry struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq,omitempty"`
}

// Op is one operation of the history.
type Op struct {
	ID        int           `json:"id"`
	Client    int           `json:"client"`
	Node      string        `json:"node"`             // the node the client sticks to
	Served    string        `json:"served,omitempty"` // the node that answered (its reply's Pi-Node)
	Transport string        `json:"transport"`        // http or nats
	Kind      Kind          `json:"kind"`
	Session   string        `json:"session"`
	Invoke    time.Duration `json:"invoke"`   // since the run's start
	Complete  time.Duration `json:"complete"` // since the run's start

	// Append input.
	Entry  string  `json:"entry,omitempty"`
	Parent string  `json:"parent,omitempty"`
	Expect *uint64 `json:"expectLastSeq,omitempty"`
	// Read input.
	Read   string `json:"read,omitempty"` // entries or export
	MinSeq uint64 `json:"minSeq,omitempty"`
	Strong bool   `json:"strong,omitempty"`

	Outcome  Outcome `json:"outcome"`
	Seq      uint64  `json:"seq,omitempty"`     // append: the entry's; create: the header's
	LastSeq  uint64  `json:"lastSeq,omitempty"` // the reply's lastSeq
	Conflict bool    `json:"conflict,omitempty"`
	// Read result.
	Entries   []Entry `json:"entries,omitempty"`
	Truncated bool    `json:"truncated,omitempty"` // more entries than one page: not checked
	Applied   *uint64 `json:"applied,omitempty"`   // Pi-Applied-Seq
	Lag       *uint64 `json:"lag,omitempty"`       // Pi-Lag
	Stale     bool    `json:"stale,omitempty"`     // Pi-Stale present

	Status   int    `json:"status,omitempty"` // the last attempt's HTTP status (NATS: error code)
	Err      string `json:"err,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
}

// String describes the operation for a violation report.
func (o *Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "op#%d %s", o.ID, o.Kind)
	switch o.Kind {
	case KindAppend:
		fmt.Fprintf(&b, " %s", o.Entry)
		if o.Expect != nil {
			fmt.Fprintf(&b, " expectLastSeq=%d", *o.Expect)
		}
	case KindRead:
		fmt.Fprintf(&b, " %s", o.Read)
		if o.MinSeq > 0 {
			fmt.Fprintf(&b, " minSeq=%d", o.MinSeq)
		}
		if o.Strong {
			b.WriteString(" strong")
		}
	}
	fmt.Fprintf(&b, " session %s by client %d via %s/%s [%v, %v] %s",
		short(o.Session), o.Client, o.Node, o.Transport, o.Invoke.Round(time.Millisecond), o.Complete.Round(time.Millisecond), o.Outcome)
	switch {
	case o.Kind == KindAppend && o.Outcome == OK:
		fmt.Fprintf(&b, " seq=%d", o.Seq)
	case o.Kind == KindRead && o.Outcome == OK:
		fmt.Fprintf(&b, " saw %d entries", len(o.Entries))
		if n := len(o.Entries); n > 0 {
			fmt.Fprintf(&b, " (last %s", o.Entries[n-1].ID)
			if s := o.Entries[n-1].Seq; s > 0 {
				fmt.Fprintf(&b, "@%d", s)
			}
			b.WriteString(")")
		}
		if o.Applied != nil {
			fmt.Fprintf(&b, " Pi-Applied-Seq=%d", *o.Applied)
		}
		if o.Lag != nil {
			fmt.Fprintf(&b, " Pi-Lag=%d", *o.Lag)
		}
		if o.Stale {
			b.WriteString(" Pi-Stale")
		}
	case o.Outcome != OK && o.Err != "":
		fmt.Fprintf(&b, " (%s)", o.Err)
	}
	return b.String()
}

// short abbreviates a session id for reports.
func short(sid string) string {
	if len(sid) > 8 {
		return sid[len(sid)-8:]
	}
	return sid
}

// recorder collects the history from every client.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []*Op
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

// now is the monotonic time since the start of the run.
func (r *recorder) now() time.Duration { return time.Since(r.start) }

// add records a completed operation and gives it its id.
func (r *recorder) add(op *Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
}

func (r *recorder) history() []*Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Op(nil), r.ops...)
}

// writeHistory writes ops and the final logs as JSON lines, gzipped when
// path ends in .gz (a run's history is some megabytes of reads).
func writeHistory(path string, ops []*Op, final map[string]map[string][]Entry) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	var w io.Writer = bw
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(bw)
		w = zw
	}
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return err
		}
	}
	if err := enc.Encode(map[string]any{"final": final}); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// server is the node that answered op: its reply's Pi-Node, else (no
// reply) over HTTP the node the client talks to, over NATS unknown ("":
// the queue group picks any member).
func (o *Op) server() string {
	if o.Served != "" {
		return o.Served
	}
	if o.Transport == "http" {
		return o.Node
	}
	return ""
}
