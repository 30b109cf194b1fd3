package tree

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// LineError is a problem with one line of a session file. Line numbers are
// 1-based physical lines of the input.
type LineError struct {
	Line int `json:"line"`
	// Field is the member of the line's entry that is wrong, for an entry
	// that fails CheckEntry ("message.role"); empty for other problems.
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

func (e *LineError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Reason)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// ReadOptions control Read.
type ReadOptions struct {
	// Strict makes the first bad line an error. Otherwise (pi's behaviour)
	// blank and invalid lines are skipped and reported in File.Skipped.
	Strict bool
	// Rand supplies the random ids that migrating a version-1 file assigns;
	// nil means crypto/rand. Tests inject a fixed source.
	Rand io.Reader
	// Validate checks every entry (after migration) against pi's shape for
	// its type (CheckEntry); one that fails is a bad line like those above,
	// its LineError naming the field.
	Validate bool
	// UniqueIDs makes a later entry with an id seen before a bad line too
	// (strict mode always refuses it). pi keeps both lines; a store holds
	// one entry per id, so an import skips the later one and says so.
	UniqueIDs bool
}

// File is a session file read into memory.
type File struct {
	*Session
	SourceVersion    int         // the header's version before migration (1 when absent)
	Skipped          []LineError // lines skipped in lenient mode (invalid JSON, not an entry, ...)
	DuplicateHeaders int         // repeated identical header lines (pi writes one when it recovers an empty file)
	EntryLines       []int       // source line of each entry, for diagnostics
	HeaderLine       int
}

// Migrated reports whether the file was in an older format and its lines were
// rewritten to version 3 (as pi rewrites the file when it opens it).
func (f *File) Migrated() bool { return f.SourceVersion < CurrentVersion }

// parsedLine is a line that is valid JSON, before it becomes an entry.
type parsedLine struct {
	no   int
	data []byte
	lf   lineFields
	obj  bool // a JSON object (pi also keeps other JSON values; we report them)
}

// Read parses a pi session file (JSONL) the way pi's SessionManager loads it:
// split on "\n" only (lines may exceed 64 KiB and hold raw U+2028), skip blank
// and malformed lines, require a session header first, ignore later header
// lines, and migrate version 1 and 2 files to version 3.
//
// The entries keep their lines byte for byte (for a version-3 file), so
// exporting reproduces the input without the skipped lines and repeated
// headers. data must not be modified afterwards: entries share its memory.
func Read(data []byte, opt ReadOptions) (*File, error) {
	lines, skipped, err := splitLines(data)
	if err != nil {
		return nil, err
	}
	// In strict mode the first bad line by line number is the error, be it
	// malformed JSON (found while splitting) or a bad entry (found below).
	if opt.Strict && len(skipped) > 0 && (len(lines) == 0 || skipped[0].Line < lines[0].no) {
		return nil, &skipped[0]
	}
	if len(lines) == 0 {
		if len(skipped) > 0 {
			first := skipped[0]
			return nil, &LineError{Line: first.Line, Reason: "no session header: " + first.Reason}
		}
		return nil, &LineError{Line: 1, Reason: "empty file: no session header"}
	}
	first := &lines[0]
	if !first.obj || !first.lf.isHeader(first.data) {
		return nil, &LineError{Line: first.no, Reason: "first line is not a session header {\"type\":\"session\",...}"}
	}
	h, err := newHeader(first.data, &first.lf)
	if err != nil {
		return nil, &LineError{Line: first.no, Reason: err.Error()}
	}
	f := &File{SourceVersion: h.Version, Skipped: skipped, HeaderLine: first.no}
	if h.Version < CurrentVersion {
		if err := migrate(lines, h.Version, newIDSource(opt.Rand)); err != nil {
			return nil, err
		}
		if h, err = newHeader(lines[0].data, &lines[0].lf); err != nil {
			return nil, &LineError{Line: first.no, Reason: err.Error()}
		}
	}
	f.Session = NewSession(h)
	f.Session.Grow(len(lines) - 1)
	f.EntryLines = make([]int, 0, len(lines)-1)

	badField := func(no int, field, reason string) error {
		if opt.Strict {
			if len(f.Skipped) > 0 && f.Skipped[0].Line < no {
				return &f.Skipped[0]
			}
			return &LineError{Line: no, Field: field, Reason: reason}
		}
		f.Skipped = append(f.Skipped, LineError{Line: no, Field: field, Reason: reason})
		return nil
	}
	bad := func(no int, reason string) error { return badField(no, "", reason) }
	for k := 1; k < len(lines); k++ {
		l := &lines[k]
		if !l.obj {
			if err := bad(l.no, "not a JSON object"); err != nil {
				return nil, err
			}
			continue
		}
		if l.lf.isHeader(l.data) {
			if bytes.Equal(l.data, lines[0].data) {
				f.DuplicateHeaders++
				continue
			}
			if err := bad(l.no, fmt.Sprintf("another session header, different from line %d (ignored, as pi does)", first.no)); err != nil {
				return nil, err
			}
			continue
		}
		e, err := newEntry(l.data, &l.lf)
		if err != nil {
			if err := bad(l.no, err.Error()); err != nil {
				return nil, err
			}
			continue
		}
		if opt.Validate {
			if err := CheckLine(l.data); err != nil {
				se := err.(*ShapeError)
				if err := badField(l.no, se.Path, se.Reason); err != nil {
					return nil, err
				}
				continue
			}
		}
		if (opt.Strict || opt.UniqueIDs) && f.Session.Has(e.ID) {
			prev, _ := f.Session.Index(e.ID)
			if err := bad(l.no, fmt.Sprintf("duplicate entry id %q (first on line %d)", e.ID, f.EntryLines[prev])); err != nil {
				return nil, err
			}
			continue
		}
		f.Session.Append(e)
		f.EntryLines = append(f.EntryLines, l.no)
	}
	if opt.Strict && len(f.Skipped) > 0 {
		return nil, &f.Skipped[0]
	}
	// Skipped in line order: splitting found the malformed lines first.
	slices.SortStableFunc(f.Skipped, func(a, b LineError) int { return a.Line - b.Line })
	return f, nil
}

// splitLines splits data like pi: content.trim().split("\n"), skipping lines
// that are blank after trim() and lines JSON.parse rejects. A line nested
// deeper than MaxDepth is not skipped but refuses the file (a *LineError),
// strict or not: pi would keep it, so skipping would drop what pi keeps,
// and it is a limit of ours, not a malformed line.
func splitLines(data []byte) ([]parsedLine, []LineError, error) {
	// content.trim(): leading and trailing JavaScript whitespace of the file.
	lineNo := 1
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if !jsjson.IsWhitespace(r) {
			break
		}
		if r == '\n' {
			lineNo++
		}
		data = data[n:]
	}
	for len(data) > 0 {
		r, n := utf8.DecodeLastRune(data)
		if !jsjson.IsWhitespace(r) {
			break
		}
		data = data[:len(data)-n]
	}
	// Room for one line per "\n", allocated once. Every kept line but the
	// last takes at least 2 bytes with its "\n", so the capacity is never
	// more than appending could reach, however many blank lines there are.
	lines := make([]parsedLine, 0, min(bytes.Count(data, []byte{'\n'})+1, len(data)/2+1))
	var skipped []LineError
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		no := lineNo
		lineNo++
		if isBlankJS(line) {
			continue
		}
		lf, err := scanLine(line)
		if se, ok := err.(*syntaxError); ok && se.msg == "not a JSON object" {
			verr := validJSON(line, true)
			if verr == nil {
				lines = append(lines, parsedLine{no: no, data: line}) // valid JSON, not an object
				continue
			}
			if _, deep := verr.(*DepthError); deep {
				err = verr
			}
		}
		if de, ok := err.(*DepthError); ok {
			return nil, nil, &LineError{Line: no, Reason: de.Error()}
		}
		if err != nil {
			skipped = append(skipped, LineError{Line: no, Reason: err.Error()})
			continue
		}
		lines = append(lines, parsedLine{no: no, data: line, lf: lf, obj: true})
	}
	return lines, skipped, nil
}

// isBlankJS reports whether line.trim() is empty in JavaScript.
func isBlankJS(line []byte) bool {
	for len(line) > 0 {
		r, n := utf8.DecodeRune(line)
		if !jsjson.IsWhitespace(r) {
			return false
		}
		line = line[n:]
	}
	return true
}

// AppendJSONL appends the session as pi writes it: the header line, then
// every entry line, each followed by "\n".
func (s *Session) AppendJSONL(dst []byte) []byte {
	dst = append(dst, s.Header.Raw...)
	dst = append(dst, '\n')
	for i := range s.entries {
		dst = append(dst, s.entries[i].Raw...)
		dst = append(dst, '\n')
	}
	return dst
}
