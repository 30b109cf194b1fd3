package pisync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pifleet/sessionlog/internal/secrets"
)

// FileState is what has been synced of one session file.
type FileState struct {
	SessionID string `json:"sessionId"`
	// Dev, Ino, Size and ModTime are the file as last read in full: while
	// they are unchanged the file is not read again.
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"` // Unix nanoseconds
	// Offset is the length of the synced prefix: every complete line
	// before it is in the cluster (or in the dead-letter file, or a line
	// pi skips too). Lines counts them, for the line numbers of messages.
	Offset int64  `json:"offset"`
	Lines  int    `json:"lines"`
	LastID string `json:"lastId,omitempty"`
	// Hash is the SHA-256 of the synced prefix's first and last Window
	// bytes (of the whole prefix when it is shorter than 2*Window): a file
	// whose prefix hashes differently was rewritten (or replaced) and is
	// compared with the cluster again. Windows, not the whole prefix, so
	// that checking a grown file reads at most 2*Window bytes of what was
	// synced before. Window 0 (a state of an earlier pi-ctl) hashed the
	// whole prefix; it is checked so once and then replaced.
	Hash   string `json:"hash"`
	Window int64  `json:"hashWindow,omitempty"`
	// HeaderHash is the SHA-256 of the file's header line, to recognize
	// pi's duplicate of it.
	HeaderHash string `json:"headerHash"`
	// Stopped says why the file is not synced any further (its header is
	// not the cluster's); it is looked at again once it is rewritten.
	Stopped string `json:"stopped,omitempty"`
}

// stateVersion is the format of the state file.
const stateVersion = 1

// stateFile is the state file's JSON.
type stateFile struct {
	Version int                   `json:"version"`
	Files   map[string]*FileState `json:"files"`
}

// loadState reads a state file; a missing one is an empty state.
func loadState(path string) (map[string]*FileState, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]*FileState{}, nil
	}
	if err != nil {
		return nil, err
	}
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, fmt.Errorf("state file %s: %v (move it away to sync from scratch: nothing is sent twice)", path, err)
	}
	if sf.Version != stateVersion {
		return nil, fmt.Errorf("state file %s: version %d, this pi-ctl writes version %d", path, sf.Version, stateVersion)
	}
	if sf.Files == nil {
		sf.Files = map[string]*FileState{}
	}
	return sf.Files, nil
}

// saveState writes the state atomically (writeAtomic), so a crash leaves
// the old state or the new one, never a torn file.
func saveState(path string, files map[string]*FileState) error {
	data, err := json.Marshal(stateFile{Version: stateVersion, Files: files})
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

// writeAtomic replaces path with data through a temporary file and a
// rename (secrets.WriteFileAtomic: mode 0600, fsynced), then fsyncs the
// directory so that the rename itself survives a crash.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := secrets.WriteFileAtomic(path, data); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// hashWindow is FileState.Window for the hashes this pi-ctl takes. pi
// rewrites a file (a migration, a recovery) by changing its header or the
// lines around the synced offset, all within it.
const hashWindow = 64 << 10

// prefixHash hashes the first and last window bytes of r's first off bytes
// (all of them when off <= 2*window; window 0: all of them, however many),
// streaming, so that memory does not grow with the prefix.
func prefixHash(r io.ReaderAt, off, window int64) (string, error) {
	h := sha256.New()
	sections := [][2]int64{{0, off}}
	if window > 0 && off > 2*window {
		sections = [][2]int64{{0, window}, {off - window, window}}
	}
	for _, sec := range sections {
		n, err := io.Copy(h, io.NewSectionReader(r, sec[0], sec[1]))
		if err != nil {
			return "", err
		}
		if n < sec[1] {
			return "", nil // shorter than the prefix: not it
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// prefixIs reports whether r begins with the prefix this state synced, as
// far as its Hash tells.
func (st *FileState) prefixIs(r io.ReaderAt) (bool, error) {
	h, err := prefixHash(r, st.Offset, st.Window)
	return err == nil && h != "" && h == st.Hash, err
}

// hashPrefix sets Hash (and Window) to r's prefix up to Offset.
func (st *FileState) hashPrefix(r io.ReaderAt) error {
	h, err := prefixHash(r, st.Offset, hashWindow)
	if err != nil {
		return err
	}
	st.Hash, st.Window = h, hashWindow
	return nil
}

// hashOf is the SHA-256 of a line, in hex.
func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
