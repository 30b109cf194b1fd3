//go:build linux

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeFirstScreen: the README's first screen says what a newcomer
// sees; this runs its commands against a real node and holds the README
// to what they print: the import's first line and summary, the session id
// it names, and that id's tree as the next step describes it.
func TestReadmeFirstScreen(t *testing.T) {
	skipShort(t)
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The fenced block after the import command: what it prints.
	m := regexp.MustCompile("(?s)```sh\ngo run ./cmd/pi-ctl import (\\S+)\n```\n```\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md: no import command followed by its output")
	}
	dir, shown := string(m[1]), strings.Split(string(m[2]), "\n")
	nd := startSingleNode(t)
	cmd := exec.Command(piCtl(t), "import", dir, "--http", nd.base)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "PI_CTL_SERVER=", "PI_CTL_HTTP=", "PI_CTL_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pi-ctl import %s: %v\n%s", dir, err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if len(shown) < 2 || norm(shown[0]) != norm(got[0]) || norm(shown[len(shown)-1]) != norm(got[len(got)-1]) {
		t.Errorf("README.md shows the import printing\n%s\nit prints\n%s", m[2], out)
	}
	sid := strings.Fields(got[0])[1]
	if !strings.Contains(string(readme), "pi-ctl tree "+sid) {
		t.Errorf("README.md's next step does not name the session the import's first line names (%s)", sid)
	}
	tree := piCtlOut(t, "tree", sid, "--http", nd.base)
	for _, want := range []string{"root_cause_found", "← leaf", "└─"} { // the label, the leaf, the branch back to the question
		if !strings.Contains(tree, want) {
			t.Errorf("pi-ctl tree %s lacks %q, which README.md describes:\n%s", sid, want, tree)
		}
	}
	if _, err := os.Stat(filepath.Join("../..", dir)); err != nil {
		t.Errorf("README.md imports %s: %v", dir, err)
	}
}

// piCtlOut runs pi-ctl with args and returns what it prints.
func piCtlOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(piCtl(t), args...)
	cmd.Env = append(os.Environ(), "PI_CTL_SERVER=", "PI_CTL_HTTP=", "PI_CTL_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pi-ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
