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
			state = fmt.Sprintf("stale (shares up to %d; needs failback)", r.Stale[name])
		}
		regions = append(regions, name+": "+state)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Stale)) {
		if !slices.Contains(r.Regions, name) {
			regions = append(regions, name+": stale")
		}
	}
	home := fmt.Sprintf("%s, epoch %d", r.Home, r.Epoch)
	if r.ForkSeq > 0 {
		home += fmt.Sprintf(" (inherited sequences up to %d)", r.ForkSeq)
	}
	kv := []string{
		"region", fmt.Sprintf("%s, %s", r.Region, r.Role),
		"home", home,
		"regions", strings.Join(regions, "; "),
		"reads", r.Reads,
		"writes", r.Writes,
	}
	if m := r.Mirror; m != nil {
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
		kv = append(kv, "mirror", lag)
	}
	kv = append(kv, "record", fmt.Sprintf("%s (%s)", orDash(r.RecordChange), shortTime(r.RecordUpdated)))
	keyValues(out, kv...)
}
