package jsonfast

import "encoding/json"

// Valid reports whether b is one well-formed JSON value, exactly as
// json.Valid does. It is a single forward scan with no function call per
// byte, several times faster than json.Valid's state machine. Nesting is
// tracked in a fixed bitset; a value nested deeper than maxValidDepth,
// which no real request or event is, is left to json.Valid to judge.
func Valid(b []byte) bool {
	var objects [maxValidDepth / 64]uint64 // bit set: the container is an object
	depth := 0
	inObject := func() bool { return objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0 }
	i := SkipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxValidDepth {
				return json.Valid(b)
			}
			if c == '{' {
				objects[depth/64] |= 1 << (depth % 64)
			} else {
				objects[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				depth--
				i++
				break
			}
			if c == '[' {
				continue
			}
			var ok bool
			if i, ok = scanMemberKey(b, i); !ok {
				return false
			}
			continue
		case c == '"':
			var ok bool
			if i, ok = scanString(b, i); !ok {
				return false
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return false
			}
			i += 4
		default:
			var ok bool
			if i, ok = scanNumber(b, i); !ok {
				return false
			}
		}
		// After a value: close containers, or move to the next element.
		for {
			i = SkipSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			obj := inObject()
			switch {
			case b[i] == ',':
				i = SkipSpace(b, i+1)
				if obj {
					var ok bool
					if i, ok = scanMemberKey(b, i); !ok {
						return false
					}
				}
			case obj && b[i] == '}' || !obj && b[i] == ']':
				depth--
				i++
				continue
			default:
				return false
			}
			break
		}
	}
}

// maxValidDepth bounds the nesting Valid accepts.
const maxValidDepth = 512

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanMemberKey reads `"key" :` at b[i] and returns the index of the
// value that follows.
func scanMemberKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return SkipSpace(b, i+1), true
}

// scanString returns the index just past the string starting at b[i] ==
// '"', checking escapes and control characters. Like json.Valid it does
// not check UTF-8: decoders replace bad bytes with U+FFFD.
func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h|0x20 >= 'a' && h|0x20 <= 'f') {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		default: // a control character
			return 0, false
		}
	}
	return 0, false
}

// scanNumber returns the index just past the number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// IsSpace reports JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first non-space byte at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}
