package jsjson

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// This file parses and serializes JSON values with JavaScript's semantics
// (see the package comment for why encoding/json will not do).

// Kind is the kind of a JSON value.
type Kind uint8

// The kinds of JSON value. The zero Value is KindNull.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// Value is a parsed JSON value with JavaScript object semantics. Only the
// field matching Kind is meaningful. Empty arrays and objects from
// ParseValue have nil Arr and Obj.
type Value struct {
	Kind Kind
	Bool bool
	// Num is the KindNumber value as JSON.parse computes it: "1e400" is
	// +Inf and "-0" is -0, both of which JSON.stringify writes differently
	// ("null" and "0").
	Num float64
	// Str is the KindString value in WTF-8 (see AppendString).
	Str string
	Arr []Value
	// Obj holds the KindObject members in JavaScript property order:
	// array-index keys in ascending numeric order, then the other keys in
	// insertion order, without duplicates. ParseValue, Set and Delete keep
	// that invariant; AppendJSON restores the order if it was broken by hand.
	Obj []Member
}

// Member is one property of a JSON object.
type Member struct {
	Key string // WTF-8
	Val Value
}

// jsMaxDepth bounds nesting. The parser itself is iterative and would not
// need it, but AppendJSON and callers walk Values recursively, and a bound
// keeps their stack use to a few megabytes whatever a file contains.
const jsMaxDepth = 100000

// jsSyntaxError is the error ParseValue returns.
type jsSyntaxError struct {
	off int
	msg string
}

func (e *jsSyntaxError) Error() string {
	return "offset " + strconv.Itoa(e.off) + ": " + e.msg
}

// jsParser is the state of one ParseValue call. vals and mems are stacks
// shared by all open containers: a container's elements accumulate on top
// and are copied into an exactly sized slice when it closes, so each
// container costs one allocation however it grows.
type jsParser struct {
	data   []byte
	pos    int
	buf    []byte // decoded string scratch, reused across strings
	vals   []Value
	mems   []Member
	frames []jsFrame
}

// jsFrame is an open array or object.
type jsFrame struct {
	obj   bool
	start int    // index of the first element in vals or mems
	key   string // for objects: the key whose value is being parsed
}

// ParseValue parses one JSON text exactly as JavaScript's JSON.parse accepts
// it: RFC 8259 with whitespace limited to SP HT LF CR around tokens (no BOM),
// no trailing commas, comments, NaN, leading zeros or raw control characters
// in strings. Strings decode to WTF-8 (see Unquote). Numbers round to
// nearest, overflowing to ±Inf. A duplicate key keeps the position of its
// first occurrence and the value of its last, and array-index keys are
// ordered before the others, as in JavaScript objects.
//
// Nesting deeper than 100000 arrays and objects is rejected. Errors name the
// byte offset and the reason, e.g. "offset 17: invalid character '}' after
// object key".
func ParseValue(data []byte) (Value, error) {
	p := jsParserPool.Get().(*jsParser)
	p.data, p.pos = data, 0
	v, err := p.parse()
	p.release()
	return v, err
}

// jsParserPool recycles parsers so that parsing many small documents (one
// per line of a session file) does not regrow the scratch stacks each time.
var jsParserPool = sync.Pool{New: func() any { return new(jsParser) }}

// release drops every reference the parser holds into parsed data and
// returns it to the pool, unless a huge document left it with scratch
// space not worth keeping.
func (p *jsParser) release() {
	clear(p.vals)
	clear(p.mems)
	clear(p.frames)
	*p = jsParser{buf: p.buf[:0], vals: p.vals[:0], mems: p.mems[:0], frames: p.frames[:0]}
	if cap(p.buf) > 1<<16 || cap(p.vals) > 1<<12 || cap(p.mems) > 1<<12 || cap(p.frames) > 1<<10 {
		return
	}
	jsParserPool.Put(p)
}

func (p *jsParser) errorf(off int, msg string) error {
	return &jsSyntaxError{off: off, msg: msg}
}

// errAt reports the byte at p.pos as unexpected in context, or the end of
// input if there is none.
func (p *jsParser) errAt(context string) error {
	if p.pos >= len(p.data) {
		return p.errorf(len(p.data), "unexpected end of JSON input")
	}
	return p.errorf(p.pos, "invalid character "+jsQuoteByte(p.data[p.pos])+" "+context)
}

// jsQuoteByte formats c for an error message.
func jsQuoteByte(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c >= 0x20 && c < 0x7F:
		return "'" + string(rune(c)) + "'"
	}
	return "byte 0x" + string(jsHex[c>>4]) + string(jsHex[c&0xF])
}

func (p *jsParser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsParser) parse() (Value, error) {
	var v Value
next:
	for {
		// Parse the start of a value; scalars are parsed whole.
		p.skipWS()
		if p.pos >= len(p.data) {
			return Value{}, p.errAt("")
		}
		switch c := p.data[p.pos]; c {
		case '{', '[':
			if len(p.frames) >= jsMaxDepth {
				return Value{}, p.errorf(p.pos, "nesting deeper than 100000")
			}
			p.pos++
			p.skipWS()
			if c == '[' {
				if p.pos < len(p.data) && p.data[p.pos] == ']' {
					p.pos++
					v = Value{Kind: KindArray}
					break
				}
				p.frames = append(p.frames, jsFrame{start: len(p.vals)})
				continue next
			}
			if p.pos < len(p.data) && p.data[p.pos] == '}' {
				p.pos++
				v = Value{Kind: KindObject}
				break
			}
			key, err := p.parseKey()
			if err != nil {
				return Value{}, err
			}
			p.frames = append(p.frames, jsFrame{obj: true, start: len(p.mems), key: key})
			continue next
		case '"':
			p.pos++
			s, err := p.parseString()
			if err != nil {
				return Value{}, err
			}
			v = Value{Kind: KindString, Str: s}
		case 't':
			if err := p.parseLiteral("true"); err != nil {
				return Value{}, err
			}
			v = Value{Kind: KindBool, Bool: true}
		case 'f':
			if err := p.parseLiteral("false"); err != nil {
				return Value{}, err
			}
			v = Value{Kind: KindBool}
		case 'n':
			if err := p.parseLiteral("null"); err != nil {
				return Value{}, err
			}
			v = Value{}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return Value{}, p.errAt("looking for beginning of value")
			}
			f, err := p.parseNumber()
			if err != nil {
				return Value{}, err
			}
			v = Value{Kind: KindNumber, Num: f}
		}

		// v is complete: add it to the innermost open container, closing
		// containers for as long as their closing bracket follows.
		for {
			p.skipWS()
			if len(p.frames) == 0 {
				if p.pos < len(p.data) {
					return Value{}, p.errAt("after top-level value")
				}
				return v, nil
			}
			f := &p.frames[len(p.frames)-1]
			if f.obj {
				p.mems = append(p.mems, Member{Key: f.key, Val: v})
				if p.pos < len(p.data) && p.data[p.pos] == ',' {
					p.pos++
					p.skipWS()
					key, err := p.parseKey()
					if err != nil {
						return Value{}, err
					}
					f.key = key
					continue next
				}
				if p.pos >= len(p.data) || p.data[p.pos] != '}' {
					return Value{}, p.errAt("after object key:value pair")
				}
				p.pos++
				v = Value{Kind: KindObject, Obj: jsFinishObject(p.mems[f.start:])}
				clear(p.mems[f.start:]) // drop references for the GC
				p.mems = p.mems[:f.start]
			} else {
				p.vals = append(p.vals, v)
				if p.pos < len(p.data) && p.data[p.pos] == ',' {
					p.pos++
					continue next
				}
				if p.pos >= len(p.data) || p.data[p.pos] != ']' {
					return Value{}, p.errAt("after array element")
				}
				p.pos++
				v = Value{Kind: KindArray, Arr: slices.Clone(p.vals[f.start:])}
				clear(p.vals[f.start:])
				p.vals = p.vals[:f.start]
			}
			p.frames = p.frames[:len(p.frames)-1]
		}
	}
}

// parseKey parses an object key and the ':' after it; p.pos is at the key.
func (p *jsParser) parseKey() (string, error) {
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return "", p.errAt("looking for beginning of object key string")
	}
	p.pos++
	key, err := p.parseString()
	if err != nil {
		return "", err
	}
	p.skipWS()
	if p.pos >= len(p.data) || p.data[p.pos] != ':' {
		return "", p.errAt("after object key")
	}
	p.pos++
	return key, nil
}

func (p *jsParser) parseLiteral(lit string) error {
	for i := 1; i < len(lit); i++ {
		p.pos++
		if p.pos >= len(p.data) || p.data[p.pos] != lit[i] {
			return p.errAt("in literal " + lit + " (expecting '" + lit[i:i+1] + "')")
		}
	}
	p.pos++
	return nil
}

// jsPow10 holds the powers of ten that float64 represents exactly.
var jsPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber parses a number literal starting at p.pos ('-' or a digit).
func (p *jsParser) parseNumber() (float64, error) {
	d := p.data
	start := p.pos
	i := p.pos
	neg := d[i] == '-'
	if neg {
		i++
	}
	var mant uint64 // the digits without the decimal point, if they fit
	ndigits := 0
	exp10 := 0
	switch {
	case i < len(d) && d[i] == '0':
		i++
		ndigits++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
			mant = mant*10 + uint64(d[i]-'0')
			ndigits++
		}
	default:
		p.pos = i
		return 0, p.errAt("in numeric literal")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return 0, p.errAt("after decimal point in numeric literal")
		}
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
			mant = mant*10 + uint64(d[i]-'0')
			ndigits++
			exp10--
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		expNeg := false
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			expNeg = d[i] == '-'
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return 0, p.errAt("in exponent of numeric literal")
		}
		e := 0
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
			if e < 1e6 { // beyond that the fast path is out anyway
				e = e*10 + int(d[i]-'0')
			}
		}
		if expNeg {
			e = -e
		}
		exp10 += e
	}
	p.pos = i

	// Clinger's fast path, as strconv uses internally: an integer mantissa
	// below 2^53 and a power of ten up to 1e22 are both exact, so one IEEE
	// multiplication or division rounds correctly. It spares the
	// string conversion strconv.ParseFloat needs for typical numbers.
	var f float64
	switch {
	case ndigits <= 19 && mant == 0:
		// Zero whatever the exponent ("0e-700"); the sign is applied below.
	case ndigits <= 19 && mant <= 1<<53 && exp10 >= -22 && exp10 <= 22:
		f = float64(mant)
		if exp10 < 0 {
			f /= jsPow10[-exp10]
		} else {
			f *= jsPow10[exp10]
		}
	default:
		// Overflow yields ±Inf with ErrRange, exactly JSON.parse's result;
		// the syntax was checked above, so no other error can occur.
		f, _ = strconv.ParseFloat(string(d[start+jsBoolInt(neg):i]), 64)
	}
	if neg {
		f = -f
	}
	return f, nil
}

func jsBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseString parses a string whose opening quote precedes p.pos, leaving
// p.pos after the closing quote.
func (p *jsParser) parseString() (string, error) {
	d := p.data
	start := p.pos
	i := start
	// Fast path: nothing to decode, the result is the input bytes.
	for i < len(d) {
		c := d[i]
		if c < utf8.RuneSelf {
			if !jsStrSafe[c] {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	if i < len(d) && d[i] == '"' {
		p.pos = i + 1
		return string(d[start:i]), nil
	}

	buf := append(p.buf[:0], d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.buf = buf
			p.pos = i + 1
			return string(buf), nil
		case c == '\\':
			i++
			if i >= len(d) {
				p.pos = i
				return "", p.errAt("")
			}
			switch d[i] {
			case '"', '\\', '/':
				buf = append(buf, d[i])
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				u, bad := jsHex4(d[i+1:])
				if bad >= 0 {
					p.pos = i + 1 + bad
					return "", p.errAt(`in \u hexadecimal character escape`)
				}
				i += 4
				switch {
				case u < 0xD800 || u > 0xDFFF:
					buf = utf8.AppendRune(buf, u)
				case u < 0xDC00 && i+6 < len(d) && d[i+1] == '\\' && d[i+2] == 'u':
					// A high surrogate escape followed by a low one is a
					// pair and decodes to the real character.
					if l, bad := jsHex4(d[i+3:]); bad < 0 && l >= 0xDC00 && l <= 0xDFFF {
						buf = utf8.AppendRune(buf, 0x10000+(u-0xD800)<<10+(l-0xDC00))
						i += 6
					} else {
						buf = jsAppendSurrogate(buf, u)
					}
				default:
					buf = jsAppendSurrogate(buf, u)
				}
			default:
				p.pos = i
				return "", p.errAt("in string escape code")
			}
			i++
		case c < 0x20:
			p.pos = i
			return "", p.errAt("in string literal")
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(d) && d[j] < utf8.RuneSelf && jsStrSafe[d[j]] {
				j++
			}
			buf = append(buf, d[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
				i += jsInvalidUTF8Len(d[i:])
			} else {
				buf = append(buf, d[i:i+size]...)
				i += size
			}
		}
	}
	p.buf = buf
	p.pos = i
	return "", p.errAt("")
}

// jsHex4 decodes four hex digits at the start of b. On failure bad is the
// index of the first offending byte (len(b) if b is too short), else -1.
func jsHex4(b []byte) (r rune, bad int) {
	for i := 0; i < 4; i++ {
		if i >= len(b) {
			return 0, i
		}
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, i
		}
		r = r<<4 | rune(c)
	}
	return r, -1
}

// jsIsArrayIndex reports whether key is an array index: the canonical
// decimal form of an integer 0 ≤ n ≤ 2^32−2. JavaScript lists such keys
// first, in numeric order, whatever the insertion order.
func jsIsArrayIndex(key string) bool {
	n := len(key)
	if n == 0 || n > 10 || key[0] < '0' || key[0] > '9' {
		return false
	}
	if key[0] == '0' {
		return n == 1
	}
	for i := 1; i < n; i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	return n < 10 || key <= "4294967294"
}

// jsCompareIndex compares two array-index keys numerically; canonical
// forms have no leading zeros, so the shorter one is smaller.
func jsCompareIndex(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jsInOrder reports whether ms lists its array-index keys first, in
// ascending order.
func jsInOrder(ms []Member) bool {
	prev := ""
	for i := range ms {
		k := ms[i].Key
		if !jsIsArrayIndex(k) {
			for _, m := range ms[i+1:] {
				if jsIsArrayIndex(m.Key) {
					return false
				}
			}
			return true
		}
		if i > 0 && jsCompareIndex(prev, k) >= 0 {
			return false
		}
		prev = k
	}
	return true
}

// jsSortMembers puts ms into JavaScript property order in place: array-index
// keys by value, then the other keys keeping their relative order.
func jsSortMembers(ms []Member) {
	slices.SortStableFunc(ms, func(a, b Member) int {
		ai, bi := jsIsArrayIndex(a.Key), jsIsArrayIndex(b.Key)
		switch {
		case ai && bi:
			return jsCompareIndex(a.Key, b.Key)
		case ai:
			return -1
		case bi:
			return 1
		}
		return 0
	})
}

// jsFinishObject builds the members of a parsed object from its key:value
// pairs in input order, with JSON.parse's semantics: each pair is a
// CreateDataProperty, so a repeated key overwrites the value in place.
func jsFinishObject(pairs []Member) []Member {
	out := make([]Member, 0, len(pairs))
	// Linear search is fastest for the small objects that dominate; large
	// ones would make it quadratic, so they get a map.
	var pos map[string]int
	if len(pairs) > 16 {
		pos = make(map[string]int, len(pairs))
	}
	for _, m := range pairs {
		j := -1
		if pos != nil {
			if k, ok := pos[m.Key]; ok {
				j = k
			} else {
				pos[m.Key] = len(out)
			}
		} else {
			for k := range out {
				if out[k].Key == m.Key {
					j = k
					break
				}
			}
		}
		if j >= 0 {
			out[j].Val = m.Val
		} else {
			out = append(out, m)
		}
	}
	if !jsInOrder(out) {
		jsSortMembers(out)
	}
	return out
}

// Get returns a pointer to the value of key, through which callers may
// modify it in place, or false if v is not an object or has no such key.
func (v *Value) Get(key string) (*Value, bool) {
	if v.Kind != KindObject {
		return nil, false
	}
	for i := range v.Obj {
		if v.Obj[i].Key == key {
			return &v.Obj[i].Val, true
		}
	}
	return nil, false
}

// Set assigns v[key] = val with JavaScript semantics: an existing key keeps
// its position; a new array-index key is inserted in numeric order among the
// leading array-index keys; any other new key is appended. Set does nothing
// if v is not an object.
func (v *Value) Set(key string, val Value) {
	if v.Kind != KindObject {
		return
	}
	if p, ok := v.Get(key); ok {
		*p = val
		return
	}
	m := Member{Key: key, Val: val}
	if !jsIsArrayIndex(key) {
		v.Obj = append(v.Obj, m)
		return
	}
	i := 0
	for i < len(v.Obj) && jsIsArrayIndex(v.Obj[i].Key) && jsCompareIndex(v.Obj[i].Key, key) < 0 {
		i++
	}
	v.Obj = slices.Insert(v.Obj, i, m)
}

// Delete removes key from v like JavaScript's delete operator, keeping the
// order of the other keys, and reports whether it was present. It does
// nothing if v is not an object.
func (v *Value) Delete(key string) bool {
	if v.Kind != KindObject {
		return false
	}
	for i := range v.Obj {
		if v.Obj[i].Key == key {
			v.Obj = slices.Delete(v.Obj, i, i+1)
			return true
		}
	}
	return false
}

// AppendJSON appends v serialized exactly as JavaScript's JSON.stringify(v)
// would, without whitespace: non-finite numbers become null, -0 becomes 0,
// strings are quoted by AppendString, and object members are written in
// JavaScript property order even if Obj was assembled in another order.
// (Duplicate keys in a hand-built Obj, which no JS object can have, are
// written as they are.)
func (v Value) AppendJSON(dst []byte) []byte {
	return jsAppendValue(dst, &v)
}

func jsAppendValue(dst []byte, v *Value) []byte {
	switch v.Kind {
	case KindBool:
		if v.Bool {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KindNumber:
		if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
			return append(dst, "null"...)
		}
		return appendNumber(dst, v.Num)
	case KindString:
		return AppendString(dst, v.Str)
	case KindArray:
		dst = append(dst, '[')
		for i := range v.Arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsAppendValue(dst, &v.Arr[i])
		}
		return append(dst, ']')
	case KindObject:
		ms := v.Obj
		if !jsInOrder(ms) {
			ms = slices.Clone(ms)
			jsSortMembers(ms)
		}
		dst = append(dst, '{')
		for i := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, ms[i].Key)
			dst = append(dst, ':')
			dst = jsAppendValue(dst, &ms[i].Val)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// Truthy reports the JavaScript truthiness of the JSON value raw, which may
// have surrounding JSON whitespace: false, null, any zero number ("0", "-0",
// "0.0", "0e5", and "1e-400", which underflows to 0) and "" are falsy;
// everything else, including "0", [] and {}, is truthy. Empty raw stands for
// undefined and is falsy; so is raw that is not valid JSON, which is treated
// as undefined too.
func Truthy(raw []byte) bool {
	v, err := ParseValue(raw)
	if err != nil {
		return false
	}
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindNumber:
		return v.Num != 0 && !math.IsNaN(v.Num)
	case KindString:
		return v.Str != ""
	case KindArray, KindObject:
		return true
	}
	return false
}

// ToString returns String(x) for the JSON value raw, which is also what a
// template literal `${x}` produces: a string's WTF-8 content, a number by
// FormatNumber, "true", "false", "null", "[object Object]" for objects,
// and for arrays Array.prototype.join(","), which converts elements by the
// same rules except that null elements become "". Empty raw stands for
// undefined and gives "undefined"; so does raw that is not valid JSON.
func ToString(raw []byte) string {
	v, err := ParseValue(raw)
	if err != nil {
		return "undefined"
	}
	if v.Kind == KindString {
		return v.Str
	}
	return string(jsAppendToString(nil, &v))
}

func jsAppendToString(dst []byte, v *Value) []byte {
	switch v.Kind {
	case KindBool:
		return strconv.AppendBool(dst, v.Bool)
	case KindNumber:
		return appendNumber(dst, v.Num)
	case KindString:
		return append(dst, v.Str...)
	case KindArray:
		for i := range v.Arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			if v.Arr[i].Kind != KindNull {
				dst = jsAppendToString(dst, &v.Arr[i])
			}
		}
		return dst
	case KindObject:
		return append(dst, "[object Object]"...)
	}
	return append(dst, "null"...)
}
