package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/wire"
)

// writeRegion renders the region block of pi-ctl status in a cross-region
// deployment (see docs/CROSS-REGION.md): this node's region and role, the
// home, every region with its state, and the mirror's lag.
func writeRegion(out *strings.Builder, r *wire.RegionStatus) {
	if r == nil {
		return
	}
	out.WriteByte('\n')
	regions := make([]string, 0, len(r.Regions))
	for _, name := range r.Regions {
		state := "mirror"
		switch _, stale := r.Stale[name]; {
		case name == r.Home:
			state = "home"
		case stale:
			state = fmt.Sprintf("stale (shares up to %s; needs failback)", byShard(r.Stale[name], r.StaleShards[name]))
		}
		regions = append(regions, name+": "+state)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Stale)) {
		if !slices.Contains(r.Regions, name) {
			regions = append(regions, name+": stale")
		}
	}
	home := fmt.Sprintf("%s, epoch %d", r.Home, r.Epoch)
	if r.ForkSeq > 0 || len(r.ForkSeqs) > 0 {
		home += fmt.Sprintf(" (inherited sequences up to %s)", byShard(r.ForkSeq, r.ForkSeqs))
	}
	if r.Shards > 1 {
		home += fmt.Sprintf("; every region's copy in %d shards", r.Shards)
	}
	kv := []string{
		"region", fmt.Sprintf("%s, %s", r.Region, r.Role),
		"home", home,
		"regions", strings.Join(regions, "; "),
		"reads", r.Reads,
		"writes", r.Writes,
	}
	if m := r.Mirror; m != nil {
		lag := mirrorLine(m)
		if len(r.ShardMirrors) > 0 {
			lag = "every shard's: " + lag
		}
		kv = append(kv, "mirror", lag)
		for k, sm := range r.ShardMirrors {
			kv = append(kv, fmt.Sprintf("  shard %d", k), mirrorLine(&sm))
		}
	}
	kv = append(kv, "record", fmt.Sprintf("%s (%s)", orDash(r.RecordChange), shortTime(r.RecordUpdated)))
	keyValues(out, kv...)
}

// mirrorLine describes one mirror (or every shard's, summed).
func mirrorLine(m *wire.MirrorStatus) string {
	lag := "unknown (the mirror has not heard from the home, which does not answer)"
	switch {
	case m.Lag != nil && m.HomeLastSeq != nil:
		lag = fmt.Sprintf("%d (the home is at %d)", *m.Lag, *m.HomeLastSeq)
	case m.Lag != nil:
		lag = fmt.Sprintf("%d as the mirror last reported (the home does not answer)", *m.Lag)
	}
	if !m.CaughtUp {
		lag += ", not caught up yet since the node started"
	}
	lag = fmt.Sprintf("%s at %d, lag %s, last contact %s ago", m.Origin, m.LastSeq, lag, orDash(m.LastContact))
	if m.Error != "" {
		lag += ", error: " + m.Error
	}
	return lag
}
