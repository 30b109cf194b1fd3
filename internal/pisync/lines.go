package pisync

import (
	"bytes"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// line is one complete line of a session file: its number (from 1), its
// bytes without the newline, and the offset just past its newline.
type line struct {
	no   int
	body []byte
	end  int64
}

// completeLines splits data[from:] into the lines that end in a newline;
// what follows the last newline is a line pi has not finished writing and
// is left out. firstNo is the number of the line at from.
func completeLines(data []byte, from int64, firstNo int) []line {
	return completeLinesAt(data[from:], from, firstNo)
}

// completeLinesAt is completeLines of data that is a file from offset base
// on: the lines' ends are offsets in the file.
func completeLinesAt(data []byte, base int64, firstNo int) []line {
	var out []line
	off, no := int64(0), firstNo
	for off < int64(len(data)) {
		k := bytes.IndexByte(data[off:], '\n')
		if k < 0 {
			break
		}
		out = append(out, line{no: no, body: data[off : off+int64(k)], end: base + off + int64(k) + 1})
		off += int64(k) + 1
		no++
	}
	return out
}

// blank reports whether a line is empty or white space (pi skips those).
func blank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// header is the fields of a session header line the sync needs.
type header struct {
	id, cwd, timestamp string
	version            int // 1 when absent (pi's version-1 files have none)
	line               []byte
}

// parseHeader reads a header line as the Store does (tree.ParseHeader: a
// JSON object with "type":"session", a string id and a version this build
// reads). The strings are copied: tree's point into the line, and the
// sync's buffers are its own to reuse.
func parseHeader(b []byte) (header, bool) {
	h, err := tree.ParseHeader(b)
	if err != nil {
		return header{}, false
	}
	return header{id: strings.Clone(h.ID), cwd: strings.Clone(h.Cwd), timestamp: strings.Clone(h.Timestamp), version: h.Version, line: b}, true
}

// lineKind is what a line after the header is to the sync.
type lineKind int

const (
	kindBlank     lineKind = iota // skipped, as pi skips it
	kindMalformed                 // not a JSON object: skipped, as pi skips it
	kindHeader                    // another session line
	kindNoID                      // an entry without a string id: cannot be sent idempotently
	kindEntry
)

// classify reads a line after the header; id is the entry's id.
func classify(b []byte) (kind lineKind, id string) {
	if blank(b) {
		return kindBlank, ""
	}
	v, err := jsjson.ParseValue(b)
	if err != nil || v.Kind != tree.KindObject {
		return kindMalformed, ""
	}
	if t, ok := v.Get("type"); ok && t.Kind == tree.KindString && t.Str == "session" {
		return kindHeader, ""
	}
	if i, ok := v.Get("id"); ok && i.Kind == tree.KindString && i.Str != "" {
		return kindEntry, i.Str
	}
	return kindNoID, ""
}

// storedSession is a session as the cluster exports it: its header line
// and each entry's line by id.
type storedSession struct {
	header  []byte
	entries map[string][]byte
	ours    bool // imported by this process, its reply lost
}

// entry is the stored line of entry id; none without a stored session.
func (s *storedSession) entry(id string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	b, ok := s.entries[id]
	return b, ok
}

// parseExport reads an export (pi JSONL, as the node wrote it).
func parseExport(data []byte) storedSession {
	s := storedSession{entries: map[string][]byte{}}
	for _, l := range completeLines(data, 0, 1) {
		if blank(l.body) {
			continue
		}
		if s.header == nil {
			s.header = l.body
			continue
		}
		if k, id := classify(l.body); k == kindEntry {
			s.entries[id] = l.body
		}
	}
	return s
}
