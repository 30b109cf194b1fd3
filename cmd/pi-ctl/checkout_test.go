package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckoutHelp: the help names what opens a checked-out file, as
// docs/PI.md does: pi --session PATH (pi --resume opens a picker instead,
// and takes no path).
func TestCheckoutHelp(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "PI.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "`pi --session PATH`") {
		t.Fatal("docs/PI.md no longer says `pi --session PATH`: the help and the docs must say the same")
	}
	for what, out := range map[string]string{
		"pi-ctl --help":          lineWith(mustRun(t, "--help"), "checkout"),
		"pi-ctl checkout --help": strings.Join(strings.Fields(mustRun(t, "checkout", "--help")), " "),
	} {
		if !strings.Contains(out, "pi --session PATH") || strings.Contains(out, "pi --resume") {
			t.Errorf("%s says of checkout %.300q; want pi --session PATH, and no pi --resume", what, out)
		}
	}
}

// lineWith is the first line of s that starts with word (after its
// indentation).
func lineWith(s, word string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), word+" ") {
			return l
		}
	}
	return ""
}
