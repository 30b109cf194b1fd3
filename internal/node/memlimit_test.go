package node

import (
	"path/filepath"
	"strings"
	"testing"
)

// The soft limit comes from the flag, else GOMEMLIMIT (left to the
// runtime), else 90% of the container's cgroup v2 limit, else none.
func TestMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	cg := func(content string) string {
		p := filepath.Join(dir, strings.ReplaceAll(content, " ", "_")+".max")
		writeFile(t, p, content+"\n")
		return p
	}
	noEnv := func(string) string { return "" }
	withEnv := func(k string) string { return map[string]string{"GOMEMLIMIT": "1GiB"}[k] }
	for _, c := range []struct {
		name, flag string
		env        func(string) string
		file       string
		want       int64
		err        string
	}{
		{"container limit", "auto", noEnv, cg("2147483648"), 1932735283, ""},
		{"no limit", "auto", noEnv, cg("max"), 0, ""},
		{"no cgroup", "auto", noEnv, filepath.Join(dir, "absent"), 0, ""},
		{"GOMEMLIMIT wins", "auto", withEnv, cg("2147483648"), 0, ""},
		{"flag", "1GiB", noEnv, cg("2147483648"), 1 << 30, ""},
		{"off", "0", noEnv, cg("2147483648"), 0, ""},
		{"bad flag", "lots", noEnv, cg("max"), 0, "--go-memory-limit"},
		{"bad cgroup", "auto", noEnv, cg("abc"), 0, "not a byte count"},
	} {
		got, from, err := memoryLimit(c.flag, c.env, c.file)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || (got > 0) != (from != "") {
			t.Errorf("%s: %d from %q, %v; want %d", c.name, got, from, err, c.want)
		}
	}
}
