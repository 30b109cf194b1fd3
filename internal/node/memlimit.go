package node

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/pifleet/sessionlog/internal/size"
)

// cgroupMemoryMax is the cgroup v2 file holding the container's memory
// limit ("max": none).
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memLimitShare is the part of the container's limit the Go heap may use
// before the collector works harder: the rest is the embedded server's
// file cache pages, stacks and what the runtime has not returned yet.
const memLimitShare = 0.9

// memoryLimit decides the Go runtime's soft memory limit: the flag
// (--go-memory-limit, "0": none, "auto": from the cgroup), else GOMEMLIMIT
// if set (the runtime has read it already), else 90% of the container's
// limit. It returns the limit and where it came from ("" when none).
func memoryLimit(flag string, getenv func(string) string, cgroupFile string) (int64, string, error) {
	switch flag {
	case "0":
		return 0, "", nil
	case "", "auto":
		if getenv("GOMEMLIMIT") != "" {
			return 0, "", nil // the runtime applied it at start
		}
		b, err := os.ReadFile(cgroupFile)
		if err != nil {
			return 0, "", nil // not in a cgroup v2 container
		}
		v := strings.TrimSpace(string(b))
		if v == "max" || v == "" {
			return 0, "", nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, "", fmt.Errorf("%s: %q is not a byte count", cgroupFile, v)
		}
		return int64(math.Floor(float64(n) * memLimitShare)), fmt.Sprintf("%.0f%% of the cgroup's %s", memLimitShare*100, size.Format(n)), nil
	}
	n, err := size.Parse(flag)
	if err != nil || n <= 0 {
		return 0, "", fmt.Errorf("--go-memory-limit %q: want a size (e.g. 1800MiB), auto or 0", flag)
	}
	return n, "--go-memory-limit", nil
}

// applyMemoryLimit sets the runtime's soft limit as memoryLimit decides.
func (m *Node) applyMemoryLimit() error {
	limit, from, err := memoryLimit(m.Config.GoMemoryLimit, os.Getenv, cgroupMemoryMax)
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		m.Logger.Info("go memory limit", "limit", size.Format(limit), "from", from)
	}
	return nil
}
