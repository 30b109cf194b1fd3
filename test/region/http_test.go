//go:build linux

package region

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// nodeStatus is the part of /v1/status the test reads.
type nodeStatus struct {
	Node  string `json:"node"`
	Store struct {
		Applied    uint64 `json:"applied"`
		LogLastSeq uint64 `json:"logLastSeq"`
		Lag        uint64 `json:"lag"`
		// With shards, each shard's Store, its sequences qualified.
		Shards []struct {
			Applied uint64 `json:"applied"`
		} `json:"shards"`
	} `json:"store"`
	JetStream struct {
		Error  string            `json:"error"`
		Region wire.RegionStatus `json:"region"`
	} `json:"jetstream"`
}

// searchFinds checks that a search at base finds sid's root entry (its
// text is "root of <sid>"): once, in sid.
func searchFinds(base, sid string) error {
	var rep wire.SearchReply
	if err := proctest.GetJSON(base+"/v1/search?q="+url.QueryEscape("root session:"+sid), &rep); err != nil {
		return err
	}
	if len(rep.Hits) != 1 || rep.Hits[0].SessionID != sid {
		return fmt.Errorf("search at %s for %s's root: %d hits %+v", base, sid, len(rep.Hits), rep.Hits)
	}
	return nil
}

// status fetches a node's /v1/status.
func status(base string) (nodeStatus, error) {
	var s nodeStatus
	if err := proctest.GetJSON(base+"/v1/status", &s); err != nil {
		return s, err
	}
	if s.JetStream.Error != "" {
		return s, fmt.Errorf("status: jetstream: %s", s.JetStream.Error)
	}
	return s, nil
}

// storedEntry is one entry as a node serves it.
type storedEntry struct {
	Seq   uint64 `json:"seq"`
	Entry struct {
		ID       string  `json:"id"`
		ParentID *string `json:"parentId"`
	} `json:"entry"`
}

func (e storedEntry) parent() string {
	if e.Entry.ParentID == nil {
		return ""
	}
	return *e.Entry.ParentID
}

// entries reads every entry of a session from one node, page by page.
func entries(ctx context.Context, base, sid string, minSeq uint64) ([]storedEntry, error) {
	var out []storedEntry
	after := uint64(0)
	for {
		url := fmt.Sprintf("%s/v1/sessions/%s/entries?afterSeq=%d&limit=10000&minSeq=%d", base, sid, after, minSeq)
		st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		if st != http.StatusOK {
			return nil, &statusError{status: st, msg: fmt.Sprintf("entries of %s from %s: %d %s", sid, base, st, body)}
		}
		var page struct {
			Entries []storedEntry `json:"entries"`
			LastSeq uint64        `json:"lastSeq"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Entries...)
		if len(page.Entries) == 0 || page.Entries[len(page.Entries)-1].Seq >= page.LastSeq {
			return out, nil
		}
		after = page.Entries[len(page.Entries)-1].Seq
	}
}

// statusError is an answer other than 200.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// createSession creates sid with one root entry through base.
func createSession(t *testing.T, base, sid, root string) {
	t.Helper()
	createChain(t, base, sid, root, 1)
}

// createChain creates sid through base with a chain of n entries (one
// atomic batch: n < 1000), the first one root; it returns the session's
// last sequence.
func createChain(t *testing.T, base, sid, root string, n int) uint64 {
	t.Helper()
	es := []proctest.Entry{proctest.NewEntry(root, "", "root of "+sid, time.Now())}
	for i := 1; i < n; i++ {
		es = append(es, proctest.NewEntry(fmt.Sprintf("%s-%d", root, i), es[i-1].ID, "entry of "+sid, time.Now()))
	}
	return createEntries(t, base, sid, es)
}

// createEntries creates sid through base with entries es (one atomic
// batch) and returns the session's last sequence.
func createEntries(t *testing.T, base, sid string, es []proctest.Entry) uint64 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"header":  map[string]any{"type": "session", "version": 3, "id": sid, "cwd": "/work", "timestamp": "2026-11-30T10:00:00.000Z"},
		"entries": es,
	})
	st, _, data, err := proctest.Do(context.Background(), proctest.ProbeClient, http.MethodPost, base+"/v1/sessions", body)
	if err != nil || st != http.StatusCreated {
		t.Fatalf("create %s via %s: %d %v %s", sid, base, st, err, data)
	}
	var wr proctest.WriteResult
	if err := json.Unmarshal(data, &wr); err != nil {
		t.Fatal(err)
	}
	return wr.LastSeq
}

// piCtl runs pi-ctl with args and returns its exit code and output.
func piCtl(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, piCtlBin, args...)
	cmd.Env = append(os.Environ(), "PI_CTL_SERVER=", "PI_CTL_HTTP=", "PI_CTL_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("pi-ctl %v: %v\n%s", args, err, out)
	}
	return 0, string(out)
}

// appliedAt reports whether the node's Store of seq's shard has applied
// the (qualified) sequence seq.
func (s nodeStatus) appliedAt(seq uint64) bool {
	if len(s.Store.Shards) == 0 {
		return s.Store.Applied >= seq
	}
	k := shard.OfSeq(seq)
	return k < len(s.Store.Shards) && s.Store.Shards[k].Applied >= seq
}

// mirrorFor is the state of the mirror that holds sid: its shard's, with
// shards. Its sequences are the stream's own (rawSeq of a served one).
func (s nodeStatus) mirrorFor(sid string) *wire.MirrorStatus {
	r := s.JetStream.Region
	if len(r.ShardMirrors) == 0 {
		return r.Mirror
	}
	if k := shardOfSession(sid); k < len(r.ShardMirrors) {
		return &r.ShardMirrors[k]
	}
	return nil
}

// shardOfSession is the shard sid is on in every region's copy.
func shardOfSession(sid string) int {
	n, err := regionShards()
	if err != nil {
		panic(err) // checked by every topology's start
	}
	return shard.OneMap(n).Of(sid)
}
