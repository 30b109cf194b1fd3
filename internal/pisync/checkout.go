package pisync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pifleet/sessionlog/internal/apiclient"
)

// ErrUnsynced is the error of a checkout that would overwrite lines the
// cluster does not have.
var ErrUnsynced = errors.New("the file has entries that are not in the cluster")

// Checkout writes session sid as pi would have written it, at pi's path
// under sessionsDir, and returns that path. A file already there is
// replaced only when every entry in it is in the cluster with the same
// content (so nothing pi wrote is lost); otherwise the error wraps
// ErrUnsynced and names the first such line. The file is written
// atomically.
func Checkout(ctx context.Context, c apiclient.Client, sid, sessionsDir string) (string, error) {
	if err := CheckSessionID(sid); err != nil {
		return "", err
	}
	data, err := exportOf(ctx, c, sid)
	if err != nil {
		return "", err
	}
	var h header
	for _, l := range completeLines(data, 0, 1) {
		if !blank(l.body) {
			h, _ = parseHeader(l.body)
			break
		}
	}
	if h.id != sid || h.timestamp == "" {
		return "", fmt.Errorf("session %s: the export has no header with its id and a timestamp", sid)
	}
	path, err := checkedSessionPath(sessionsDir, h.cwd, h.timestamp, sid)
	if err != nil {
		return "", err
	}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", err
	case bytes.Equal(old, data):
		return path, nil
	default:
		if err := coveredBy(path, old, parseExport(data)); err != nil {
			return "", err
		}
	}
	// Mode 0600: conversations are private to the user.
	if err := writeAtomic(path, data); err != nil {
		return "", err
	}
	return path, nil
}

// coveredBy checks that every entry of a local file is in the stored
// session with the same bytes.
func coveredBy(path string, local []byte, stored storedSession) error {
	var missing []string
	first := 0
	for _, l := range completeLines(local, 0, 1) {
		kind, id := classify(l.body)
		if kind != kindEntry {
			continue
		}
		if have, ok := stored.entries[id]; !ok || !bytes.Equal(have, l.body) {
			if first == 0 {
				first = l.no
			}
			missing = append(missing, id)
		}
	}
	// A last line without its newline is pi still writing: not in the
	// cluster either.
	if k := bytes.LastIndexByte(local, '\n'); k+1 < len(local) && !blank(local[k+1:]) {
		missing = append(missing, "(a line being written)")
		if first == 0 {
			first = bytes.Count(local, []byte("\n")) + 1
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s:%d: %w: %d (%s); run pi-ctl sync first, or move the file away", path, first, ErrUnsynced, len(missing), strings.Join(missing[:min(len(missing), 5)], ", "))
}
