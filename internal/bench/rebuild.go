package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// RebuildOptions configure the rebuild scenario.
type RebuildOptions struct {
	Sessions int // default 50,000
	Entries  int // in all, realistic sizes (default 1,000,000)
	Active   int // sessions interleaved while loading (default 1000)
	Seed     uint64
	// Dir is the data dir. A dir that holds this very load (same sessions,
	// entries, interleaving and seed, see manifestName) is reused as it is;
	// a new or empty one is loaded. "" uses a temporary dir.
	Dir string
	// The node's settings: pi-node's --sync always, --memory-budget,
	// --snapshot-interval (default 5m, its default; 0 disables snapshots).
	SyncAlways    bool
	MemoryBudget  int64
	SnapshotEvery time.Duration
	// Reads is how many context reads are timed once the node has caught
	// up, and (at most one per session) after the restart (default 10,000).
	Reads int
	// Samples is how many sessions are read raw, filtered (default 5).
	Samples int
	// Settle waits, after a fresh load, until JetStream's 2-minute
	// duplicate window has passed: a server that starts within it rebuilds
	// the window's message ids from the stream, which a node restarted in
	// production (writes spread over days) does not do.
	Settle bool
	// NodeBin runs this pi-node binary as a process instead of the node in
	// this process.
	NodeBin string
	// Idle is how long the node is left idle before its memory is read
	// (default 11 s; negative: not at all): JetStream keeps the blocks it
	// read cached for 10 s, which is not what the node holds for good.
	Idle time.Duration
	// CPUProfile, when set, receives a CPU profile of the first start's
	// rebuild (in-process only), from the Store's open to caught up.
	CPUProfile string
	Progress   Progress
}

func (o *RebuildOptions) defaults() {
	o.Sessions = cmp0(o.Sessions, 50000)
	o.Entries = cmp0(o.Entries, 1000000)
	o.Active = cmp0(o.Active, 1000)
	o.Reads = cmp0(o.Reads, 10000)
	o.Samples = cmp0(o.Samples, 5)
	if o.SnapshotEvery < 0 {
		o.SnapshotEvery = 0
	}
	if o.Idle == 0 {
		o.Idle = 11 * time.Second
	}
}

// manifestName is the file in a data dir that says which load it holds.
const manifestName = "bench-load.json"

type manifest struct {
	Sessions int       `json:"sessions"`
	Entries  int       `json:"entries"`
	Active   int       `json:"active"`
	Seed     uint64    `json:"seed"`
	LoadedAt time.Time `json:"loadedAt"`
	Loaded   *Loaded   `json:"loaded"`
}

// prepare returns the load the data dir holds, loading it first unless the
// dir holds it already, and whether it was reused.
func prepare(ctx context.Context, o RebuildOptions) (*manifest, bool, error) {
	path := filepath.Join(o.Dir, manifestName)
	want := manifest{Sessions: o.Sessions, Entries: o.Entries, Active: o.Active, Seed: o.Seed}
	if b, err := os.ReadFile(path); err == nil {
		var m manifest
		if json.Unmarshal(b, &m) == nil && m.Loaded != nil && m.Sessions == want.Sessions && m.Entries == want.Entries &&
			m.Active == want.Active && m.Seed == want.Seed {
			return &m, true, nil
		}
		// Another load: ours to replace.
		for _, d := range []string{"jetstream", "store", manifestName} {
			if err := os.RemoveAll(filepath.Join(o.Dir, d)); err != nil {
				return nil, false, err
			}
		}
	} else if des, err := os.ReadDir(o.Dir); err == nil && len(des) > 0 {
		return nil, false, fmt.Errorf("data dir %s is not empty and holds no %s: give a new or empty dir", o.Dir, manifestName)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, false, err
	}
	// Loading needs no fsync per message: it is not what is measured.
	n := &Node{Opts: NodeOptions{Dir: o.Dir}}
	if err := n.StartServer(ctx); err != nil {
		return nil, false, err
	}
	loaded, err := Load(ctx, n.Conn.JS, n.Log, LoadOptions{Sessions: o.Sessions, Entries: o.Entries, Active: o.Active, Seed: o.Seed}, o.Progress)
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, err
	}
	want.Loaded, want.LoadedAt = loaded, time.Now()
	b, err := json.Marshal(want)
	if err != nil {
		return nil, false, err
	}
	return &want, false, os.WriteFile(path, b, 0o644)
}

// settle waits until the duplicate window (2 minutes, the wire contract's)
// of the last loaded message has passed.
func settle(ctx context.Context, loadedAt time.Time, prog Progress) error {
	return waitUntil(ctx, loadedAt.Add(2*time.Minute+5*time.Second), "waiting out the 2-minute duplicate window (s)", prog)
}

// waitUntil waits until t, reporting the seconds gone by.
func waitUntil(ctx context.Context, t time.Time, phase string, prog Progress) error {
	total := int(time.Until(t).Seconds() + 0.5)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		left := time.Until(t)
		if left <= 0 {
			return nil
		}
		prog.report(phase, total-int(left.Seconds()+0.5), total)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// tempDir returns dir, or when it is "" a new temporary dir (named after
// pattern) and its removal.
func tempDir(dir, pattern string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

var errNoSessions = errors.New("rebuild: the load holds no sessions")
