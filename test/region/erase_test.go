//go:build linux

package region

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// deleteSession deletes sid through the node at base, asking again on
// 503 and 504 as clients are told to.
func deleteSession(t *testing.T, base, sid string) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("delete "+sid+" through "+base, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodDelete, base+"/v1/sessions/"+sid, nil)
		switch {
		case err != nil:
			return err
		case st == http.StatusOK:
			return nil
		case st == http.StatusServiceUnavailable || st == http.StatusGatewayTimeout:
			return fmt.Errorf("delete: %d %s", st, body)
		}
		t.Fatalf("delete %s through %s: %d %s", sid, base, st, body)
		return nil
	}))
}

// goneIn waits until sid is gone from each node's reads (404) and from
// the stream of each node's region's copy, straight from JetStream:
// erased, not only dropped by the Stores.
func goneIn(t *testing.T, ctx context.Context, sid string, nodes ...*node) {
	t.Helper()
	for _, n := range nodes {
		testutil.WaitFor(t, time.Minute, testutil.Awaiting(sid+" gone from "+n.name+"'s reads", func() error {
			_, err := entries(ctx, n.base, sid, 0)
			var se *statusError
			if errors.As(err, &se) && se.status == http.StatusNotFound {
				return nil
			}
			return fmt.Errorf("entries of an erased session: %v", err)
		}))
		_, js := connectJS(t, n.natsURL)
		cfg := jetstream.NewConfig()
		cfg.Stream, cfg.SubjectPrefix = "PI_SESSIONS_"+n.region, "pi.sess."+n.region
		cfg = cfg.Shard(shardOfSession(sid))
		testutil.WaitFor(t, time.Minute, testutil.Awaiting(sid+" erased from "+cfg.Stream, func() error {
			recs, err := jetstream.NewLog(js, cfg).Read(ctx, sid, 0)
			if errors.Is(err, wire.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("%s holds %d records of %s", cfg.Stream, len(recs), sid)
		}))
	}
}

// archiveRefused checks that a node in cross-region mode refuses an
// archive pass, saying why.
func archiveRefused(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodPost, base+"/v1/archive/run", []byte(`{"olderThan":"1h"}`))
	if err != nil || st != http.StatusBadRequest || !strings.Contains(string(body), "cross-region") {
		t.Errorf("archive run in cross-region mode: %d %s %v, want 400 naming cross-region mode", st, body, err)
	}
}
