//go:build linux

package region

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// checkRegionMetrics: a node of the mirror region exports its mirror's lag
// as /v1/status reports it, and the stream its Store follows; a node of
// the home region exports no mirror lag. The regions must be quiet (no
// writes), so that the lag holds still between the two reads.
func checkRegionMetrics(t *testing.T, home, mirror *node) {
	t.Helper()
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the mirror's lag in /metrics as in /v1/status", func() error {
		st, err := status(mirror.base)
		if err != nil {
			return err
		}
		ms := st.JetStream.Region.Mirror
		if ms == nil || ms.Lag == nil {
			return fmt.Errorf("%s: no mirror lag in /v1/status: %+v", mirror.name, st.JetStream.Region)
		}
		got, err := proctest.Metrics(mirror.base)
		if err != nil {
			return err
		}
		lag := proctest.Series("pi_region_mirror_lag", "region", mirror.region)
		if v, ok := got[lag]; !ok || v != float64(*ms.Lag) {
			return fmt.Errorf("%s: %s = %v (present %v), /v1/status says %d", mirror.name, lag, v, ok, *ms.Lag)
		}
		reads := st.JetStream.Region.Reads
		for s := range got {
			if strings.HasPrefix(s, "pi_stream_info{") && strings.Contains(s, `stream="`+reads+`"`) {
				return nil
			}
		}
		return fmt.Errorf("%s: no pi_stream_info for %s, the stream it reads", mirror.name, reads)
	}))
	got, err := proctest.Metrics(home.base)
	if err != nil {
		t.Fatal(err)
	}
	for s := range got {
		if strings.HasPrefix(s, "pi_region_mirror_lag") {
			t.Errorf("%s, of the home region, exports %s", home.name, s)
		}
	}
}
