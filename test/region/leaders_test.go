//go:build linux

package region

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// regionStream is shard k's stream of region's copy.
func regionStream(region string, k int) string {
	if k == 0 {
		return "PI_SESSIONS_" + region
	}
	return "PI_SESSIONS_" + region + "_" + strconv.Itoa(k)
}

// pileAndSpread piles the leaders of every shard's stream of region's copy
// on one of its servers (stepdowns naming it), then waits until the
// region's nodes have spread them again: no server leads two more streams
// than another. Without the nodes' balancing the pile stays.
func pileAndSpread(t *testing.T, ctx context.Context, top *topology, region string, shards int) {
	t.Helper()
	nc, js := connectJS(t, top.regions[region][0].natsURL)
	// Every request of a poll is bounded: a stepdown sent to a leader that
	// has just stepped down (the nodes balance meanwhile) gets no answer,
	// and a poll waiting on the test's context would wait for minutes.
	const ask = 5 * time.Second
	leaders := func() ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, ask)
		defer cancel()
		out := make([]string, shards)
		for k := range shards {
			s, err := js.Stream(ctx, regionStream(region, k))
			if err != nil {
				return nil, err
			}
			if out[k] = s.CachedInfo().Cluster.Leader; out[k] == "" {
				return nil, fmt.Errorf("%s has no leader", regionStream(region, k))
			}
		}
		return out, nil
	}
	var target string
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("region "+region+"'s leaders piled on one server", func() error {
		ls, err := leaders()
		if err != nil {
			return err
		}
		if target == "" {
			target = ls[0]
		}
		piled := true
		for k, l := range ls {
			if l == target {
				continue
			}
			piled = false
			body := fmt.Appendf(nil, `{"placement":{"preferred":%q}}`, target)
			rctx, cancel := context.WithTimeout(ctx, ask)
			_, err := nc.RequestWithContext(rctx, "$JS.API.STREAM.LEADER.STEPDOWN."+regionStream(region, k), body)
			cancel()
			if err != nil {
				return fmt.Errorf("stepdown of %s to %s: %w", regionStream(region, k), target, err)
			}
		}
		if !piled {
			return fmt.Errorf("leaders %v, piling on %s", ls, target)
		}
		return nil
	}))
	began := time.Now()
	testutil.WaitFor(t, 2*time.Minute, testutil.Awaiting("region "+region+"'s leaders spread again", func() error {
		ls, err := leaders()
		if err != nil {
			return err
		}
		count := map[string]int{}
		for _, nd := range top.regions[region] {
			count[nd.name] = 0
		}
		for _, l := range ls {
			count[l]++
		}
		var ns []int
		for _, n := range count {
			ns = append(ns, n)
		}
		if slices.Max(ns)-slices.Min(ns) > 1 {
			return fmt.Errorf("leaders %v", count)
		}
		t.Logf("MEASURED region %s's %d shard leaders, piled on %s, spread again (%v) %v later", region, shards, target, count, time.Since(began).Round(time.Millisecond))
		return nil
	}))
}
