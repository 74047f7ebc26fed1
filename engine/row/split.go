package row

import (
	"bytes"
	"errors"
)

// Members and Elements let a reader of a container of rows (a steps-file
// line) walk it with the row scanner, once, without building generic
// values: they validate the whole input under the scanner's grammar, which
// accepts a subset of what encoding/json accepts (it also refuses invalid
// UTF-8 and lone surrogates in strings). A caller that must report
// encoding/json's own messages treats any error as "take the slow path".

// Members calls f with each member of the JSON object in data (space around
// it allowed, nothing else): the raw name between its quotes, whether the
// name has escapes, and the value's bytes, without surrounding space.
// Repeated names are not checked here. An error from f ends the walk with
// it.
//
// each, when not nil, is asked about every member before its value is
// scanned: when it returns a function and the value is an array, that
// function scans each element in turn: it gets the array's bytes from the
// element's first byte on, at nesting depth ElementDepth, and returns the
// element's length, having validated it (Decoder.DecodePrefix and
// Inferrer.AddPrefix do), so that an element is scanned once, not twice.
// An error from each, or from the function, ends the walk with it.
func Members(data []byte, each func(name []byte, esc bool) (func(rest []byte) (int, error), error), f func(name []byte, esc bool, val []byte) error) error {
	var it objectIter
	if err := it.begin(data); err != nil {
		return err
	}
	s := &it.s
	for {
		// objectIter.next, with the value's scan left to each.
		if s.pos >= len(data) {
			return s.errorf("unterminated object")
		}
		if it.first {
			it.first = false
			if data[s.pos] == '}' {
				return it.end()
			}
		} else {
			switch data[s.pos] {
			case ',':
				s.pos++
				s.skipSpace()
			case '}':
				return it.end()
			default:
				return s.errorf("want ',' or '}' in an object, got %s", s.describeByte())
			}
		}
		if s.pos >= len(data) || data[s.pos] != '"' {
			return s.errorf("want a field name, got %s", s.describeByte())
		}
		nameStart := s.pos + 1
		esc, err := s.str()
		if err != nil {
			return err
		}
		name := data[nameStart : s.pos-1]
		s.skipSpace()
		if s.pos >= len(data) || data[s.pos] != ':' {
			return s.errorf("want ':' after a field name, got %s", s.describeByte())
		}
		s.pos++
		s.skipSpace()
		var elem func([]byte) (int, error)
		if each != nil {
			if elem, err = each(name, esc); err != nil {
				return err
			}
		}
		start := s.pos
		if elem != nil && s.pos < len(data) && data[s.pos] == '[' {
			err = s.elements(ElementDepth-1, elem)
		} else {
			_, _, err = s.value(1)
		}
		if err != nil {
			return err
		}
		if err := f(name, esc, data[start:s.pos]); err != nil {
			return err
		}
		s.skipSpace()
	}
}

// errNotArray is Elements' refusal of anything but an array.
var errNotArray = errors.New("not a JSON array")

// Elements calls f with the bytes of each element of the JSON array in
// data (space around it allowed, nothing else), without surrounding space.
// An error from f ends the walk with it.
func Elements(data []byte, f func(elem []byte) error) error {
	s := scanner{data: data}
	s.skipSpace()
	if s.pos >= len(data) || data[s.pos] != '[' {
		return errNotArray
	}
	err := s.elements(1, func(rest []byte) (int, error) {
		e := scanner{data: rest}
		if _, _, err := e.value(1); err != nil {
			return 0, err
		}
		return e.pos, f(rest[:e.pos])
	})
	if err != nil {
		return err
	}
	s.skipSpace()
	if s.pos != len(data) {
		return s.errorf("data after the array")
	}
	return nil
}

// ElementDepth is the nesting depth of the elements Members' each
// functions scan: in a member's array in an object.
const ElementDepth = 3

// elements scans the array at pos, at nesting depth depth (as array
// counts it), each element by scan (which gets the rest of the input and
// returns the element's length), and leaves pos after the closing bracket.
func (s *scanner) elements(depth int, scan func(rest []byte) (int, error)) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	data := s.data
	s.pos++ // [
	s.skipSpace()
	if s.pos < len(data) && data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		n, err := scan(data[s.pos:])
		if err != nil {
			return err
		}
		s.pos += n
		s.skipSpace()
		if s.pos >= len(data) {
			return s.errorf("unterminated array")
		}
		switch data[s.pos] {
		case ']':
			s.pos++
			return nil
		case ',':
			s.pos++
			s.skipSpace()
		default:
			return s.errorf("want ',' or ']' in an array, got %s", s.describeByte())
		}
	}
}

// AppendCompact appends valid JSON (as Members, Elements or Decode
// accepted it) without its insignificant space, as json.Compact writes it
// (json.Compact escapes nothing either).
func AppendCompact(dst, valid []byte) []byte {
	inString := false
	for i := 0; i < len(valid); i++ {
		c := valid[i]
		switch {
		case inString:
			if c == '\\' {
				dst = append(dst, c, valid[i+1])
				i++
				continue
			}
			if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// IsCompact reports that valid JSON has no insignificant space, so that
// AppendCompact would copy it unchanged. It answers false for any space,
// also one inside a string (AppendCompact keeps that one).
func IsCompact(valid []byte) bool {
	// Four vectorised searches beat one loop over the bytes.
	return bytes.IndexByte(valid, ' ') < 0 && bytes.IndexByte(valid, '\t') < 0 &&
		bytes.IndexByte(valid, '\n') < 0 && bytes.IndexByte(valid, '\r') < 0
}

// ValidCompact reports whether data is one JSON value under the row
// scanner's grammar with no insignificant space, before, after or inside
// it (space in a string is the string's): json.Compact would copy it
// unchanged. One scan answers both Valid and a precise IsCompact.
func ValidCompact(data []byte) bool {
	s := scanner{data: data}
	if _, _, err := s.value(0); err != nil {
		return false
	}
	return s.pos == len(data) && !s.spaced
}

// Valid reports whether data is one JSON value (space around it allowed)
// under the row scanner's grammar, a subset of encoding/json's.
func Valid(data []byte) bool {
	s := scanner{data: data}
	s.skipSpace()
	if _, _, err := s.value(0); err != nil {
		return false
	}
	s.skipSpace()
	return s.pos == len(data)
}
