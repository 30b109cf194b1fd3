//go:build linux

package region

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
)

// measureMirrorLag writes through the home region's node and measures how
// long the mirror region's node takes to serve the entry: by polling a
// plain read (the mirror's lag as a reader sees it), and with minSeq set to
// the write's sequence (read-your-writes across regions: mirrors keep the
// home's sequences, so the home's ack is a valid minSeq in every region).
func measureMirrorLag(t *testing.T, ctx context.Context, home, mirror string) {
	t.Helper()
	sid := uuid.Must(uuid.NewV7()).String()
	createSession(t, home, sid, "probe-root")
	const probes = 100
	var visible, minSeq []time.Duration
	parent := "probe-root"
	// i = 0 warms up: a mirror's first messages wait for its consumer on
	// the origin to be set up, which is start-up, not lag.
	for i := 0; i <= probes; i++ {
		e := proctest.NewEntry(fmt.Sprintf("p%d", i), parent, "probe", time.Now())
		st, _, data, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodPost, home+"/v1/sessions/"+sid+"/entries", proctest.AppendBody(e))
		if err != nil || st != http.StatusOK {
			t.Fatalf("probe write: %d %v %s", st, err, data)
		}
		acked := time.Now()
		var wr proctest.WriteResult
		if err := json.Unmarshal(data, &wr); err != nil {
			t.Fatal(err)
		}
		seq := wr.Entries[0].Seq
		if i == 0 {
			testutil.WaitFor(t, time.Minute, testutil.Awaiting("the mirror region serving a write of the home", func() error {
				_, err := entries(ctx, mirror, sid, seq)
				return err
			}))
		} else if i%2 == 0 {
			if _, err := entries(ctx, mirror, sid, seq); err != nil {
				t.Fatalf("read with minSeq %d in the mirror region: %v", seq, err)
			}
			minSeq = append(minSeq, time.Since(acked))
		} else {
			// Polled every millisecond: the lag is a few of them.
			url := fmt.Sprintf("%s/v1/sessions/%s/entries?afterSeq=%d", mirror, sid, seq-1)
			for {
				st, h, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, url, nil)
				if err == nil && st == http.StatusOK {
					// Reads in a mirror region carry the mirror's lag.
					if _, perr := strconv.ParseUint(h.Get("Pi-Lag"), 10, 64); perr != nil {
						t.Fatalf("read in the mirror region: Pi-Lag %q", h.Get("Pi-Lag"))
					}
				}
				if err == nil && st == http.StatusOK && strings.Contains(string(body), `"id":"`+e.ID+`"`) {
					break
				}
				if time.Since(acked) > 10*time.Second {
					t.Fatalf("probe %s not served in the mirror region within 10 s: %d %v %s", e.ID, st, err, body)
				}
				time.Sleep(time.Millisecond)
			}
			visible = append(visible, time.Since(acked))
		}
		parent = e.ID
	}
	t.Logf("MEASURED mirror read lag (write acked in A -> served by a node in B), %d probes: p50 %v, p90 %v, max %v",
		len(visible), pct(visible, 50), pct(visible, 90), pct(visible, 100))
	t.Logf("MEASURED read in B with minSeq of a write acked in A, %d probes: p50 %v, p90 %v, max %v",
		len(minSeq), pct(minSeq, 50), pct(minSeq, 90), pct(minSeq, 100))
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := min(len(s)-1, len(s)*p/100)
	return s[i].Round(100 * time.Microsecond)
}

// connectJS connects to natsURL for the rest of the test.
func connectJS(t *testing.T, natsURL string) (*nats.Conn, natsjs.JetStream) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// streamOf reads every record of the given sessions from region's stream,
// straight from JetStream (not through a node).
func streamOf(t *testing.T, ctx context.Context, natsURL, region string, sids []string) map[string][]session.Stored {
	t.Helper()
	_, js := connectJS(t, natsURL)
	base := jetstream.NewConfig()
	base.Stream, base.SubjectPrefix = "PI_SESSIONS_"+region, "pi.sess."+region
	out := map[string][]session.Stored{}
	for _, sid := range sids {
		// Each session on its shard's stream; its sequences qualified
		// as the nodes serve them.
		k := shardOfSession(sid)
		cfg := base.Shard(k)
		recs, err := jetstream.NewLog(js, cfg).Read(ctx, sid, 0)
		if err != nil {
			t.Fatalf("read %s from %s: %v", sid, cfg.Stream, err)
		}
		for i := range recs {
			recs[i].Seq = shard.Seq(k, recs[i].Seq)
		}
		out[sid] = recs
	}
	return out
}

// missingIn returns the acknowledged entries whose attempt was sent before
// dead (so the lost home may have handled it) that region B's stream lacks,
// and how many such entries there are.
func missingIn(t *testing.T, ctx context.Context, natsURL string, ws []*writer, dead time.Time) ([]ack, int) {
	t.Helper()
	var sids []string
	for _, w := range ws {
		if !slices.Contains(sids, w.sid) {
			sids = append(sids, w.sid)
		}
	}
	stored := streamOf(t, ctx, natsURL, "B", sids)
	have := map[string]bool{}
	for sid, recs := range stored {
		for _, r := range recs {
			have[sid+"/"+r.ID] = true
		}
	}
	var missing []ack
	total := 0
	for _, w := range ws {
		acks, lost := w.snapshot()
		for _, a := range append(acks, lost...) {
			if a.sent.Before(dead) {
				total++
				if !have[a.sid+"/"+a.id] {
					missing = append(missing, a)
				}
			}
		}
	}
	return missing, total
}

// verify checks the end state: every node caught up with B's stream and
// serving the same entries; every acknowledged entry stored exactly once,
// with the parent it was written with; every session holding both regions'
// entries; the entries missing at failover back, as branches.
func verify(t *testing.T, ctx context.Context, top *topology, ws []*writer, sids []string, rpo []ack) {
	t.Helper()
	bURL := top.regions["B"][0].natsURL
	stored := streamOf(t, ctx, bURL, "B", sids)
	last := map[string]uint64{} // by session (each shard has its own sequences)
	for sid, recs := range stored {
		last[sid] = recs[len(recs)-1].Seq
	}
	for _, nd := range top.all() {
		testutil.WaitFor(t, time.Minute, func() error {
			s, err := status(nd.base)
			if err != nil {
				return fmt.Errorf("%s: %w", nd.name, err)
			}
			if s.JetStream.Region.Home != "B" || len(s.JetStream.Region.Stale) > 0 {
				return fmt.Errorf("%s: region %+v", nd.name, s.JetStream.Region)
			}
			for sid, seq := range last {
				if !s.appliedAt(seq) {
					return fmt.Errorf("%s: has not applied %d (%s's last; applied %d)", nd.name, seq, sid, s.Store.Applied)
				}
			}
			return nil
		})
	}
	count := map[string]int{}
	parentOf := map[string]string{}
	for sid, recs := range stored {
		regions := map[byte]int{}
		for _, r := range recs {
			if r.IsHeader() {
				continue
			}
			count[sid+"/"+r.ID]++
			parentOf[sid+"/"+r.ID] = r.Parent
			regions[r.ID[0]]++
		}
		if regions['a'] == 0 || regions['b'] == 0 {
			t.Errorf("session %s holds entries of writers in %v only", sid, regions)
		}
	}
	for key, c := range count {
		if c != 1 {
			t.Errorf("entry %s stored %d times", key, c)
		}
	}
	acked := 0
	for _, w := range ws {
		acks, lost := w.snapshot()
		for _, a := range append(acks, lost...) {
			acked++
			key := a.sid + "/" + a.id
			if count[key] != 1 {
				t.Errorf("acknowledged entry %s (writer %s, seq %d) stored %d times", key, a.writer, a.seq, count[key])
			} else if parentOf[key] != a.parent {
				t.Errorf("entry %s stored with parent %q, written with %q", key, parentOf[key], a.parent)
			}
		}
	}
	branches := 0
	for _, a := range rpo {
		children := 0
		for key, p := range parentOf {
			if strings.HasPrefix(key, a.sid+"/") && p == a.parent {
				children++
			}
		}
		if children > 1 {
			branches++
		}
	}
	t.Logf("MEASURED after failback: %d acknowledged entries, each stored exactly once with its parent; the %d missing at failover are back, %d of them beside a continuation written meanwhile (a branch)",
		acked, len(rpo), branches)
	sameOnEveryNode(t, ctx, top, sids, last)
}

// sameOnEveryNode checks that every node serves the same entries, at the
// same sequences, for every session.
func sameOnEveryNode(t *testing.T, ctx context.Context, top *topology, sids []string, last map[string]uint64) {
	t.Helper()
	for _, sid := range sids {
		var want string
		for _, nd := range top.all() {
			es, err := entries(ctx, nd.base, sid, last[sid])
			if err != nil {
				t.Fatalf("%s: %v", nd.name, err)
			}
			var b strings.Builder
			for _, e := range es {
				fmt.Fprintf(&b, "%d:%s<%s ", e.Seq, e.Entry.ID, e.parent())
			}
			if want == "" {
				want = b.String()
			} else if b.String() != want {
				t.Errorf("session %s differs on %s:\n%s\nwant\n%s", sid, nd.name, b.String(), want)
			}
		}
	}
}
