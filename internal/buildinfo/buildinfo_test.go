package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGet(t *testing.T) {
	recorded := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202123932-15153112df8f"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "15153112df8f37cb178e0157f842027910acb196"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	none := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true
	}
	for _, tc := range []struct {
		name         string
		version, rev string
		read         func() (*debug.BuildInfo, bool)
		want         Info
	}{
		{"stamped wins", "v1.2.0", "abc", recorded, Info{Version: "v1.2.0", Revision: "abc", Modified: true}},
		{"recorded by the toolchain", "", "", recorded, Info{Version: "v0.0.0-20261202123932-15153112df8f", Revision: "15153112df8f37cb178e0157f842027910acb196", Modified: true}},
		{"nothing recorded", "", "", none, Info{Version: "devel", Revision: "unknown"}},
		{"no build info at all", "", "", func() (*debug.BuildInfo, bool) { return nil, false }, Info{Version: "devel", Revision: "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Go = runtime.Version()
			if got := get(tc.version, tc.rev, tc.read); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if s := (Info{Version: "v1", Revision: "abc", Go: "go1.26.8", Modified: true}).String(); s != "v1 (revision abc, go1.26.8), modified" {
		t.Fatalf("String: %q", s)
	}
}
