package tree

import (
	"bytes"
	"strconv"
)

// MaxDepth is the deepest nesting of arrays and objects pi-node accepts in
// any JSON a client sends: request bodies (CheckDepth, before any decoder
// runs) and session lines (the line scanner, so ParseEntry, ParseHeader and
// Read). The outermost container is level 1.
//
// pi's own entries nest about 10 deep (entry, message, content, a block,
// tool arguments) and a request body adds 2 ({"entries":[...]}), so 512
// leaves room for any tool's arguments or details while it keeps a
// decoder's recursion (segmentio's decoder has no bound of its own: 2
// million '[' overflowed the goroutine's stack, which kills the process)
// and the recursive walkers of Values (AppendJSON) to a few hundred frames.
// encoding/json, which replies and clients use, stops at 10000, well above.
const MaxDepth = 512

// DepthError reports JSON nested deeper than MaxDepth. It wraps nothing:
// callers name the input it is about (wire.Invalid("body", ...), a
// LineError's line).
type DepthError struct {
	// Offset is the byte offset, in the document checked, of the '[' or '{'
	// that opens level MaxDepth+1.
	Offset int
}

func (e *DepthError) Error() string {
	return "JSON nested deeper than " + strconv.Itoa(MaxDepth) + " levels at byte offset " + strconv.Itoa(e.Offset)
}

// CheckDepth returns a *DepthError when data nests arrays and objects
// deeper than MaxDepth, and nil otherwise. It does not validate: it counts
// '[' and '{' against ']' and '}' outside string literals, which is the
// depth any decoder reaches on the way to the point where it would stop,
// so it runs before one, in one pass, allocating nothing. Unbalanced
// closers never take the count below zero (the decoder refuses them).
func CheckDepth(data []byte) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			// Skip the string: find the closing quote, one not preceded by
			// an odd run of backslashes. Text is most of an entry's bytes,
			// and IndexByte crosses it at memory speed.
			j := i + 1
			for {
				k := bytes.IndexByte(data[j:], '"')
				if k < 0 {
					return nil // unterminated: the decoder's error, at this depth
				}
				j += k
				n := 0
				for n < j-i-1 && data[j-1-n] == '\\' {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return &DepthError{Offset: i}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
