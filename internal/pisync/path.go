package pisync

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultSessionsDir is where pi keeps its sessions: $PI_CODING_AGENT_DIR/sessions,
// else ~/.pi/agent/sessions (pi's getAgentDir).
func DefaultSessionsDir(getenv func(string) string) (string, error) {
	if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
		return filepath.Join(expandHome(d, getenv), "sessions"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		home = h
	}
	return filepath.Join(home, ".pi", "agent", "sessions"), nil
}

// expandHome resolves a leading "~" as pi does for PI_CODING_AGENT_DIR.
func expandHome(p string, getenv func(string) string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		return filepath.Join(getenv("HOME"), p[1:])
	}
	return p
}

var (
	leadingSep = regexp.MustCompile(`^[/\\]`)
	cwdSeps    = regexp.MustCompile(`[/\\:]`)
	stampSeps  = regexp.MustCompile(`[:.]`)
)

// DirName is pi's directory name for a cwd (getDefaultSessionDir): the
// leading separator dropped, every / \ and : made a dash, between "--".
func DirName(cwd string) string {
	return "--" + cwdSeps.ReplaceAllString(leadingSep.ReplaceAllString(cwd, ""), "-") + "--"
}

// FileName is pi's file name for a session (newSession): the header's
// timestamp with : and . made dashes, "_", the session id.
func FileName(timestamp, sessionID string) string {
	return stampSeps.ReplaceAllString(timestamp, "-") + "_" + sessionID + ".jsonl"
}

// SessionPath is where pi keeps a session under the sessions directory.
func SessionPath(sessionsDir, cwd, timestamp, sessionID string) string {
	return filepath.Join(sessionsDir, DirName(cwd), FileName(timestamp, sessionID))
}

// sessionIDShape is a session id as pi-node stores them: a canonical
// lower-case UUID, nothing a path could be made of.
var sessionIDShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// CheckSessionID refuses an id that is not a session id before it becomes
// part of a file name: ids come from a server's replies, and a server
// that is wrong or malicious must not make pi-ctl write outside the
// directory it was given ("x/../../escape").
func CheckSessionID(id string) error {
	if !sessionIDShape.MatchString(id) {
		return fmt.Errorf("%q is not a session id (a lower-case UUID): refused as a file name", id)
	}
	return nil
}

// checkedSessionPath is SessionPath for a session whose id and header come
// from the cluster: the id must be one, and the file must land directly in
// the cwd's directory under sessionsDir (a timestamp such as "../../x/y"
// would otherwise make folders, or leave it).
func checkedSessionPath(sessionsDir, cwd, timestamp, sessionID string) (string, error) {
	if err := CheckSessionID(sessionID); err != nil {
		return "", err
	}
	name := FileName(timestamp, sessionID)
	if strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("session %s: its header's timestamp %q is not one pi writes: refused as a file name", sessionID, timestamp)
	}
	dir := filepath.Join(sessionsDir, DirName(cwd))
	if rel, err := filepath.Rel(sessionsDir, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == "." {
		return "", fmt.Errorf("session %s: its cwd %q makes no directory under %s: refused", sessionID, cwd, sessionsDir)
	}
	return filepath.Join(dir, name), nil
}
