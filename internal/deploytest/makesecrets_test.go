package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMakeSecretsAdvice runs make secrets into a temporary directory: it
// says where the secrets are, and tells only a user other than root to
// export PI_SECRETS_GID (root's group is the compose files' default). The
// target's pi-ctl is the one secretTools builds, in bin/ of the directory
// make runs in, so that the checkout's bin/ is left alone (-o build).
func TestMakeSecretsAdvice(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	root, work := repoRoot(t), t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretTools(t)["pi-ctl"], filepath.Join(work, "bin", "pi-ctl")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "secrets")
	cmd := exec.Command("make", "-s", "-C", work, "-f", filepath.Join(root, "Makefile"), "-o", "build", "secrets",
		"GO=go -C "+root, "SECRETS_DIR="+dir, "SECRETS_NAMES=n1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make secrets: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "nats-peers.conf")); err != nil {
		t.Errorf("make secrets wrote no nats-peers.conf: %v\n%s", err, out)
	}
	said := string(out)
	if !strings.Contains(said, "secrets in "+dir) {
		t.Errorf("make secrets does not say where the secrets are:\n%s", said)
	}
	advice := "export PI_SECRETS_GID=" + strconv.Itoa(os.Getgid())
	if asRoot := os.Getuid() == 0; asRoot == strings.Contains(said, "PI_SECRETS_GID") || !asRoot && !strings.Contains(said, advice) {
		t.Errorf("make secrets as uid %d says:\n%s\nwant %q only when not root", os.Getuid(), said, advice)
	}
}
