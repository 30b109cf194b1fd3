package jsjson

import (
	"bytes"
	"math"
	"strconv"
	"unsafe"
)

// DateMillis returns new Date(x).getTime() for the JSON value raw, as it
// appears in a document (no surrounding whitespace); pi uses it both to
// order children and to stamp summary messages. A string is parsed by the
// ECMAScript date format (see parseISODate), a number is clipped to a time
// value, null and false give the epoch and true 1 ms after it. Empty raw
// stands for undefined and, like objects, arrays and unparsable values,
// gives NaN (which JSON.stringify then writes as null).
func DateMillis(raw []byte) float64 {
	if len(raw) == 0 {
		return math.NaN()
	}
	switch raw[0] {
	case '"':
		return parseISODate(dateString(raw))
	case 'n': // new Date(null) is the epoch
		return 0
	case 't':
		return 1
	case 'f':
		return 0
	case '{', '[':
		return math.NaN()
	}
	f, ok := ParseNumber(raw)
	if !ok {
		return math.NaN()
	}
	return timeClip(f)
}

// dateString decodes the string literal raw for parseISODate. Timestamps
// rarely have escapes: without one the content is used in place, sharing
// raw's memory; parseISODate does not keep it.
func dateString(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		s, _ := Unquote(raw)
		return s
	}
	if len(inner) == 0 {
		return ""
	}
	return unsafe.String(&inner[0], len(inner))
}

func timeClip(f float64) float64 {
	if math.IsNaN(f) || math.Abs(f) > 8.64e15 {
		return math.NaN()
	}
	return math.Trunc(f) + 0 // +0 turns -0 into 0
}

// ParseNumber parses the JSON number literal raw as JSON.parse does:
// rounding to nearest, overflowing to ±Inf. raw is taken to be a number a
// JSON scanner has already checked; ok is false if it does not start like
// one or strconv.ParseFloat rejects it.
func ParseNumber(raw []byte) (float64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// parseISODate implements the ECMAScript Date Time String Format that
// Date.parse must accept: YYYY[-MM[-DD]][THH:mm[:ss[.sss]]][Z|±HH:mm], with
// ±YYYYYY expanded years. Forms without an offset are taken as UTC (ECMAScript
// says date-time forms without one are local time; sessions are written by
// toISOString, which always says Z, so only hand-made files can differ).
// Anything else is NaN: V8's fallback parser for legacy formats is not reproduced.
func parseISODate(s string) float64 {
	p := isoParser{s: s}
	year, ok := p.year()
	if !ok {
		return math.NaN()
	}
	month, day := 1, 1
	if p.eat('-') {
		if month, ok = p.digits(2); !ok || month < 1 || month > 12 {
			return math.NaN()
		}
		if p.eat('-') {
			if day, ok = p.digits(2); !ok || day < 1 || day > 31 {
				return math.NaN()
			}
		}
	}
	var hour, minute, sec, milli int
	offset := 0
	if p.eat('T') || p.eat(' ') { // V8's fallback parser also takes a space
		if hour, ok = p.digits(2); !ok || !p.eat(':') {
			return math.NaN()
		}
		if minute, ok = p.digits(2); !ok || minute > 59 {
			return math.NaN()
		}
		if p.eat(':') {
			if sec, ok = p.digits(2); !ok || sec > 59 {
				return math.NaN()
			}
			if p.eat('.') {
				n := 0
				for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					if n < 3 {
						milli = milli*10 + int(p.s[p.i]-'0')
					}
					n++
					p.i++
				}
				if n == 0 {
					return math.NaN()
				}
				for ; n < 3; n++ {
					milli *= 10
				}
			}
		}
		if hour > 24 || hour == 24 && (minute != 0 || sec != 0 || milli != 0) {
			return math.NaN()
		}
		switch {
		case p.eat('Z'):
		case p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-'):
			sign := 1
			if p.s[p.i] == '-' {
				sign = -1
			}
			p.i++
			oh, ok1 := p.digits(2)
			ok2 := p.eat(':')
			om, ok3 := p.digits(2)
			if !ok1 || !ok2 || !ok3 || oh > 23 || om > 59 {
				return math.NaN()
			}
			offset = sign * (oh*60 + om)
		}
	}
	if p.i != len(p.s) {
		return math.NaN()
	}
	days := daysFromCivil(year, month, day)
	ms := float64(days)*86400000 + float64(((hour*60+minute-offset)*60+sec)*1000+milli)
	return timeClip(ms)
}

type isoParser struct {
	s string
	i int
}

func (p *isoParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *isoParser) digits(n int) (int, bool) {
	if len(p.s)-p.i < n {
		return 0, false
	}
	v := 0
	for k := 0; k < n; k++ {
		c := p.s[p.i+k]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

func (p *isoParser) year() (int, bool) {
	if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
		neg := p.s[p.i] == '-'
		p.i++
		y, ok := p.digits(6)
		if !ok || neg && y == 0 { // -000000 is not allowed
			return 0, false
		}
		if neg {
			y = -y
		}
		return y, true
	}
	return p.digits(4)
}

// daysFromCivil returns days since 1970-01-01 (proleptic Gregorian). Like
// ECMAScript's MakeDay, a day past the month's end rolls over (Feb 30 = Mar 2).
func daysFromCivil(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
