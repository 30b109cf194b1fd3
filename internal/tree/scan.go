package tree

import (
	"errors"
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// This file holds the one JSON pass every line goes through: it validates the
// line exactly as JavaScript's JSON.parse would accept it and, on the way,
// reports where the top-level members' values lie, so entries keep their raw
// bytes and decode only the few fields the algorithms read. It is iterative:
// a line of a million '[' is an error, not a stack overflow.

// errSyntax is wrapped by every scanner error.
var errSyntax = errors.New("invalid JSON")

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg) }
func (e *syntaxError) Unwrap() error { return errSyntax }

// span locates a value inside a line: data[off : off+n]. n == 0 means absent.
type span struct{ off, n uint32 }

func (s span) ok() bool                  { return s.n != 0 }
func (s span) of(data []byte) []byte     { return data[s.off : s.off+s.n] }
func mkspan(start, end int) span         { return span{uint32(start), uint32(end - start)} }
func (s span) isString(data []byte) bool { return s.n >= 2 && data[s.off] == '"' }

// strEscaped is the flag str reports for a string literal with a backslash
// escape.
const strEscaped = 1

type scanner struct {
	data []byte
	pos  int
	// depth counts the objects members has open around pos; bounded
	// scanners (lines) refuse a container at level MaxDepth+1 with a
	// *DepthError, as CheckDepth does.
	depth   int
	bounded bool
}

// deeper reports the *DepthError of a container opening at pos with open
// containers already around it, or nil.
func (s *scanner) deeper(open int) error {
	if s.bounded && s.depth+open >= MaxDepth {
		return &DepthError{Offset: s.pos}
	}
	return nil
}

func (s *scanner) fail(msg string) error { return &syntaxError{s.pos, msg} }

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// strPlain[c] is true for the bytes a string literal holds as they are:
// anything but '"', '\\' and control characters. (Bytes >= 0x80 are not
// checked: node decodes invalid UTF-8 to U+FFFD before JSON.parse sees it.)
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < len(t); c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans a string literal starting at the opening quote.
func (s *scanner) str() (flags int, err error) {
	d := s.data
	i := s.pos + 1 // after the opening quote
	for {
		for i < len(d) && strPlain[d[i]] {
			i++
		}
		s.pos = i
		if i >= len(d) {
			return 0, s.fail("unterminated string")
		}
		switch d[i] {
		case '"':
			s.pos++
			return flags, nil
		case '\\':
			flags |= strEscaped
			if i+1 >= len(d) {
				return 0, s.fail("unterminated escape")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return 0, s.fail("short \\u escape")
				}
				for _, h := range d[i+2 : i+6] {
					if !isHexDigit(h) {
						return 0, s.fail("bad \\u escape")
					}
				}
				i += 6
			default:
				return 0, s.fail("bad escape character")
			}
		default:
			return 0, s.fail("control character in string")
		}
	}
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) number() error {
	d := s.data
	if s.pos < len(d) && d[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(d) {
		return s.fail("truncated number")
	}
	switch c := d[s.pos]; {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			s.pos++
		}
	default:
		return s.fail("bad number")
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		start := s.pos
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			s.pos++
		}
		if s.pos == start {
			return s.fail("bad fraction")
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		start := s.pos
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			s.pos++
		}
		if s.pos == start {
			return s.fail("bad exponent")
		}
	}
	return nil
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// value scans one complete JSON value (any nesting) starting at s.pos, which
// must not be whitespace. It leaves s.pos just after the value.
func (s *scanner) value() error {
	// The open containers, '{' or '['. Kept in a local array so that values
	// nested up to 32 deep allocate nothing (a slice stored in *s would send
	// its array to the heap, once per line).
	var buf [32]byte
	stack := buf[:0]
	d := s.data
	for {
		// Expect a value.
		if s.pos >= len(d) {
			return s.fail("unexpected end of input")
		}
		switch c := d[s.pos]; {
		case c == '{':
			if err := s.deeper(len(stack)); err != nil {
				return err
			}
			s.pos++
			s.ws()
			if s.pos < len(d) && d[s.pos] == '}' {
				s.pos++
				break
			}
			stack = append(stack, '{')
			if err := s.key(); err != nil {
				return err
			}
			continue
		case c == '[':
			if err := s.deeper(len(stack)); err != nil {
				return err
			}
			s.pos++
			s.ws()
			if s.pos < len(d) && d[s.pos] == ']' {
				s.pos++
				break
			}
			stack = append(stack, '[')
			continue
		case c == '"':
			if _, err := s.str(); err != nil {
				return err
			}
		case c == '-' || c >= '0' && c <= '9':
			if err := s.number(); err != nil {
				return err
			}
		case c == 't':
			if err := s.literal("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := s.literal("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := s.literal("null"); err != nil {
				return err
			}
		default:
			return s.fail(fmt.Sprintf("unexpected character %q", c))
		}
		// After a value: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				return nil
			}
			s.ws()
			if s.pos >= len(d) {
				return s.fail("unexpected end of input")
			}
			top := stack[len(stack)-1]
			c := d[s.pos]
			if c == ',' {
				s.pos++
				s.ws()
				if top == '{' {
					if err := s.key(); err != nil {
						return err
					}
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				s.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			return s.fail(fmt.Sprintf("unexpected character %q after value", c))
		}
	}
}

// key scans `"name" :` and the whitespace after the colon.
func (s *scanner) key() error {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return s.fail("object key expected")
	}
	if _, err := s.str(); err != nil {
		return err
	}
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return s.fail("':' expected after object key")
	}
	s.pos++
	s.ws()
	return nil
}

// members validates the object starting at s.pos and calls visit with each
// member's key (raw, without quotes; escaped reports backslashes in it) and
// value span. visit may itself call members on a nested object value by
// moving s.pos; it returns true when it consumed the value that way.
func (s *scanner) members(visit func(key []byte, escaped bool, valStart int) (consumed bool, err error)) error {
	d := s.data
	if s.pos >= len(d) || d[s.pos] != '{' {
		return s.fail("object expected")
	}
	if err := s.deeper(0); err != nil {
		return err
	}
	s.pos++
	s.ws()
	if s.pos < len(d) && d[s.pos] == '}' {
		s.pos++
		return nil
	}
	s.depth++
	for {
		if s.pos >= len(d) || d[s.pos] != '"' {
			return s.fail("object key expected")
		}
		kStart := s.pos
		flags, err := s.str()
		if err != nil {
			return err
		}
		key := d[kStart+1 : s.pos-1]
		s.ws()
		if s.pos >= len(d) || d[s.pos] != ':' {
			return s.fail("':' expected after object key")
		}
		s.pos++
		s.ws()
		if s.pos >= len(d) {
			return s.fail("unexpected end of input after ':'")
		}
		consumed, err := visit(key, flags&strEscaped != 0, s.pos)
		if err != nil {
			return err
		}
		if !consumed {
			if err := s.value(); err != nil {
				return err
			}
		}
		s.ws()
		if s.pos >= len(d) {
			return s.fail("unexpected end of input in object")
		}
		switch d[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case '}':
			s.pos++
			s.depth--
			return nil
		default:
			return s.fail(fmt.Sprintf("unexpected character %q in object", d[s.pos]))
		}
	}
}

// Valid reports whether data is one JSON text as JSON.parse accepts it.
func Valid(data []byte) bool { return validJSON(data, false) == nil }

// validJSON is Valid's pass, giving the error; bounded refuses nesting
// deeper than MaxDepth (a *DepthError), as lines do.
func validJSON(data []byte, bounded bool) error {
	s := scanner{data: data, bounded: bounded}
	s.ws()
	if err := s.value(); err != nil {
		return err
	}
	s.ws()
	if s.pos != len(data) {
		return s.fail("data after the value")
	}
	return nil
}

// keyIs compares a raw member key with name, decoding escapes when present
// (JSON.parse treats "\u0074ype" as "type").
func keyIs(key []byte, escaped bool, name string) bool {
	if !escaped {
		return string(key) == name
	}
	k, ok := unquoteRaw(key)
	return ok && k == name
}

// unquoteRaw decodes the inside of a string literal (no quotes) into WTF-8.
func unquoteRaw(inner []byte) (string, bool) {
	buf := make([]byte, 0, len(inner)+2)
	buf = append(buf, '"')
	buf = append(buf, inner...)
	buf = append(buf, '"')
	return jsjson.Unquote(buf)
}
