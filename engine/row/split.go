package row

import "errors"

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
func Members(data []byte, f func(name []byte, esc bool, val []byte) error) error {
	var it objectIter
	if err := it.begin(data); err != nil {
		return err
	}
	for {
		m, ok, err := it.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := f(m.name, m.nameEsc, data[m.start:m.end]); err != nil {
			return err
		}
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
	s.pos++
	s.skipSpace()
	if s.pos < len(data) && data[s.pos] == ']' {
		s.pos++
	} else {
		for {
			start := s.pos
			if _, _, err := s.value(1); err != nil {
				return err
			}
			if err := f(data[start:s.pos]); err != nil {
				return err
			}
			s.skipSpace()
			if s.pos >= len(data) {
				return s.errorf("unterminated array")
			}
			c := data[s.pos]
			s.pos++
			if c == ']' {
				break
			}
			if c != ',' {
				s.pos--
				return s.errorf("want ',' or ']' in an array, got %s", s.describeByte())
			}
			s.skipSpace()
		}
	}
	s.skipSpace()
	if s.pos != len(data) {
		return s.errorf("data after the array")
	}
	return nil
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
	for _, c := range valid {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return false
		}
	}
	return true
}
