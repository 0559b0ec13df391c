package jsonfast

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes a valid JSON string token (quotes included) with
// encoding/json's rules. Tokens without escapes and with valid UTF-8, the
// common case, are copied as they are.
func Unquote(tok []byte) string {
	if inner := tok[1 : len(tok)-1]; !isPlainString(inner) {
		return unescapeJSON(inner)
	}
	return string(tok[1 : len(tok)-1])
}

// isPlainString reports whether the inside of a string token decodes to
// itself: no escapes, valid UTF-8.
func isPlainString(inner []byte) bool {
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			return bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner)
		}
	}
	return true
}

// unescapeJSON decodes the inside of a valid JSON string with
// encoding/json's rules: a lone or mismatched surrogate escape and every
// invalid UTF-8 byte become U+FFFD.
func unescapeJSON(s []byte) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r)
			i += size
			continue
		}
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch e := s[i+1]; e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if len(s) >= i+6 && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, e)
		}
		i += 2
	}
	return string(out)
}

// hex4 reads the four hex digits of a \u escape in a valid document.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
