package pisync

import (
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
