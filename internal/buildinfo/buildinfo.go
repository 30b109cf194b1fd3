package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped by the Makefile: -ldflags "-X github.com/pifleet/sessionlog/internal/buildinfo.version=... -X ...revision=...".
var version, revision string

// Info is a binary's build.
type Info struct {
	Version  string `json:"version"`            // a tag or git describe; "devel" for an unstamped build
	Revision string `json:"revision"`           // the commit; "unknown" when not recorded
	Go       string `json:"go"`                 // the Go release it was built with
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
}

// Get returns this binary's build.
func Get() Info {
	return get(version, revision, debug.ReadBuildInfo)
}

func get(stampedVersion, stampedRevision string, read func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: stampedVersion, Revision: stampedRevision, Go: runtime.Version()}
	if bi, ok := read(); ok {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Revision == "" {
					in.Revision = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if in.Revision == "" {
		in.Revision = "unknown"
	}
	return in
}

// String is the one line `--version` prints.
func (in Info) String() string {
	s := fmt.Sprintf("%s (revision %s, %s)", in.Version, in.Revision, in.Go)
	if in.Modified {
		s += ", modified"
	}
	return s
}
