package row

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// valueKind is the JSON type of a scanned value.
type valueKind uint8

const (
	kindNone valueKind = iota // zero value: "not seen"
	kindString
	kindNumber
	kindTrue
	kindFalse
	kindNull
	kindObject
	kindArray
)

func (k valueKind) String() string {
	switch k {
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	case kindTrue:
		return "true"
	case kindFalse:
		return "false"
	case kindNull:
		return "null"
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	}
	return "nothing"
}

// maxDepth bounds nesting, as encoding/json does, so that hostile input
// cannot exhaust the stack.
const maxDepth = 10000

// scanner validates and walks JSON text in place. It is the hot path of
// Decode: no allocation, one pass, and it checks the full JSON grammar so
// that a row Decode accepts is a row encoding/json accepts.
type scanner struct {
	data []byte
	pos  int
	// spaced: skipSpace passed over space (insignificant: between tokens).
	spaced bool
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
			s.spaced = true
		default:
			return
		}
	}
}

// describeByte names the byte at pos for "unexpected" messages.
func (s *scanner) describeByte() string {
	if s.pos >= len(s.data) {
		return "end of input"
	}
	return fmt.Sprintf("%q", s.data[s.pos])
}

// value scans one value at pos (no leading space). escaped reports, for a
// string, whether it needs unescaping (backslashes or non-UTF-8 bytes).
func (s *scanner) value(depth int) (kind valueKind, escaped bool, err error) {
	if s.pos >= len(s.data) {
		return kindNone, false, s.errorf("want a value, got end of input")
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		escaped, err = s.str()
		return kindString, escaped, err
	case c == '-' || ('0' <= c && c <= '9'):
		return kindNumber, false, s.number()
	case c == 't':
		return kindTrue, false, s.literal("true")
	case c == 'f':
		return kindFalse, false, s.literal("false")
	case c == 'n':
		return kindNull, false, s.literal("null")
	case c == '{':
		return kindObject, false, s.object(depth + 1)
	case c == '[':
		return kindArray, false, s.array(depth + 1)
	}
	return kindNone, false, s.errorf("want a value, got %s", s.describeByte())
}

// str scans a string starting at the opening quote and leaves pos after the
// closing one.
func (s *scanner) str() (escaped bool, err error) {
	// The common string, plain ASCII to its closing quote, in locals (a
	// loop over s.pos stores it at every byte).
	data, pos := s.data, s.pos+1 // after the opening quote
	for pos < len(data) && plainByte[data[pos]] {
		pos++
	}
	if pos < len(data) && data[pos] == '"' {
		s.pos = pos + 1
		return false, nil
	}
	s.pos = pos
	for s.pos < len(s.data) {
		// Plain ASCII runs, the bulk of most strings, in a tight loop.
		for s.pos < len(s.data) && plainByte[s.data[s.pos]] {
			s.pos++
		}
		if s.pos >= len(s.data) {
			break
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.pos++
			if s.pos >= len(s.data) {
				return false, s.errorf("unterminated string")
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				s.pos++
				r, err := s.hex4()
				if err != nil {
					return false, err
				}
				// A \u escape must name a Unicode scalar value: a high
				// surrogate only as the first half of a pair, a low one
				// never alone. encoding/json turns a lone surrogate into
				// U+FFFD, which would make "\ud800", "\udfff" and a
				// literal U+FFFD one key.
				switch {
				case utf16.IsSurrogate(r) && r < 0xdc00:
					at := s.pos - 6
					if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
						s.pos += 2
						lo, err := s.hex4()
						if err != nil {
							return false, err
						}
						if lo >= 0xdc00 && lo <= 0xdfff {
							break
						}
					}
					s.pos = at
					return false, s.errorf("\\u%04x is a lone high surrogate, not a Unicode character (a surrogate pair is \\ud83d\\ude00)", r)
				case utf16.IsSurrogate(r):
					s.pos -= 6
					return false, s.errorf("\\u%04x is a lone low surrogate, not a Unicode character", r)
				}
			default:
				return false, s.errorf("invalid escape \\%c", s.data[s.pos])
			}
		case c < 0x20:
			return false, s.errorf("control character %q in string", c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && size == 1 {
				// encoding/json would decode it to U+FFFD and so make
				// distinct byte strings one key: refuse it (a literal
				// U+FFFD is three valid bytes and is accepted).
				return false, s.errorf("invalid UTF-8 byte %#02x in a string", c)
			}
			s.pos += size
		default:
			s.pos++
		}
	}
	return false, s.errorf("unterminated string")
}

// plainByte marks the bytes str passes over without a second look: ASCII
// but the quote, the backslash and control characters.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 reads the four hex digits of a \u escape at pos.
func (s *scanner) hex4() (rune, error) {
	var r rune
	for i := 0; i < 4; i++ {
		if s.pos >= len(s.data) || !isHex(s.data[s.pos]) {
			return 0, s.errorf("invalid \\u escape")
		}
		c := s.data[s.pos]
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
		s.pos++
	}
	return r, nil
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	// In locals, as str; s.pos is set before any error (its byte offset).
	d, pos := s.data, s.pos
	if pos < len(d) && d[pos] == '-' {
		pos++
	}
	switch {
	case pos < len(d) && d[pos] == '0':
		pos++
	case pos < len(d) && isDigit(d[pos]):
		for pos < len(d) && isDigit(d[pos]) {
			pos++
		}
	default:
		s.pos = pos
		return s.errorf("want a digit, got %s", s.describeByte())
	}
	if pos < len(d) && d[pos] == '.' {
		pos++
		if pos >= len(d) || !isDigit(d[pos]) {
			s.pos = pos
			return s.errorf("want a digit after the decimal point, got %s", s.describeByte())
		}
		for pos < len(d) && isDigit(d[pos]) {
			pos++
		}
	}
	if pos < len(d) && (d[pos] == 'e' || d[pos] == 'E') {
		pos++
		if pos < len(d) && (d[pos] == '+' || d[pos] == '-') {
			pos++
		}
		if pos >= len(d) || !isDigit(d[pos]) {
			s.pos = pos
			return s.errorf("want a digit in the exponent, got %s", s.describeByte())
		}
		for pos < len(d) && isDigit(d[pos]) {
			pos++
		}
	}
	s.pos = pos
	return nil
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.errorf("want %s", lit)
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) object(depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.pos++ // {
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.errorf("want a field name, got %s", s.describeByte())
		}
		if _, err := s.str(); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.errorf("want ':' after a field name, got %s", s.describeByte())
		}
		s.pos++
		s.skipSpace()
		if _, _, err := s.value(depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.errorf("unterminated object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or '}' in an object, got %s", s.describeByte())
		}
	}
}

func (s *scanner) array(depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.pos++ // [
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if _, _, err := s.value(depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.errorf("unterminated array")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or ']' in an array, got %s", s.describeByte())
		}
	}
}

// member is one field of the top-level object: the raw name (without
// quotes) and the value's span.
type member struct {
	name       []byte // raw bytes between the quotes
	nameEsc    bool
	start, end int
	kind       valueKind
	valEsc     bool
}

// objectIter walks the fields of a top-level object without allocating.
// Usage: begin, then next until it reports !ok or an error.
type objectIter struct {
	s     scanner
	first bool
	// prefix: the object is the start of s.data, and whatever follows it
	// is the caller's (beginPrefix).
	prefix bool
	// depth is the object's nesting depth in the text it is part of, for
	// the nesting limit (1 for a row on its own).
	depth int
}

// beginPrefix is begin for an object at the start of data (no space
// before it) at nesting depth depth; the object ends where the walk ends
// (s.pos), not at the end of data.
func (it *objectIter) beginPrefix(data []byte, depth int) error {
	it.s = scanner{data: data}
	it.first, it.prefix, it.depth = true, true, depth
	s := &it.s
	if s.pos >= len(data) || data[s.pos] != '{' {
		return fmt.Errorf("row is not a JSON object")
	}
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.pos++
	s.skipSpace()
	return nil
}

// begin checks that data holds an object and positions at its first field.
func (it *objectIter) begin(data []byte) error {
	it.s = scanner{data: data}
	it.first = true
	s := &it.s
	s.skipSpace()
	if s.pos >= len(data) {
		return fmt.Errorf("row is empty, want a JSON object")
	}
	if data[s.pos] != '{' {
		kind, _, err := s.value(0)
		if err != nil {
			return err
		}
		return fmt.Errorf("row is %s, want a JSON object", kind)
	}
	s.pos++
	s.skipSpace()
	return nil
}

// next returns the next field; ok is false after the closing brace, once
// the rest of the input has been checked to be only whitespace.
func (it *objectIter) next() (m member, ok bool, err error) {
	s := &it.s
	data := s.data
	if s.pos >= len(data) {
		return m, false, s.errorf("unterminated object")
	}
	if it.first {
		it.first = false
		if data[s.pos] == '}' {
			return m, false, it.end()
		}
	} else {
		switch data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			return m, false, it.end()
		default:
			return m, false, s.errorf("want ',' or '}' in an object, got %s", s.describeByte())
		}
	}
	if s.pos >= len(data) || data[s.pos] != '"' {
		return m, false, s.errorf("want a field name, got %s", s.describeByte())
	}
	nameStart := s.pos + 1
	if m.nameEsc, err = s.str(); err != nil {
		return m, false, err
	}
	m.name = data[nameStart : s.pos-1]
	s.skipSpace()
	if s.pos >= len(data) || data[s.pos] != ':' {
		return m, false, s.errorf("want ':' after a field name, got %s", s.describeByte())
	}
	s.pos++
	s.skipSpace()
	m.start = s.pos
	if m.kind, m.valEsc, err = s.value(max(it.depth, 1)); err != nil {
		return m, false, err
	}
	m.end = s.pos
	s.skipSpace()
	return m, true, nil
}

// end consumes the closing brace and checks nothing but space follows.
func (it *objectIter) end() error {
	s := &it.s
	s.pos++ // }
	if it.prefix {
		return nil
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return s.errorf("data after the row object")
	}
	return nil
}
