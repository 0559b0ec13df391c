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

// unescapeJSON decodes the inside of a valid JSON string with
// encoding/json's rules: a lone or mismatched surrogate escape and every
// invalid UTF-8 byte become U+FFFD.
func unescapeJSON(inner []byte) string {
	out := AppendUnescaped(make([]byte, 0, len(inner)), inner)
	if !utf8.Valid(out) {
		out = replaceInvalidUTF8(out)
	}
	return string(out)
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

// AppendUnescaped appends the inside of a JSON string (the bytes between
// its quotes) decoded as encoding/json decodes escapes: a lone or
// mismatched surrogate escape becomes U+FFFD. Two things differ, for
// callers that must give back what the client sent (the secret
// firewall): bytes that are not valid UTF-8 are kept as they are (Unquote
// replaces them, as encoding/json does), and an escape that is not valid
// JSON (the input was not checked) is kept as written instead of failing.
func AppendUnescaped(dst, inner []byte) []byte {
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c != '\\' || i+1 >= len(inner) {
			dst = append(dst, c)
			continue
		}
		i++
		switch inner[i] {
		case '"', '\\', '/':
			dst = append(dst, inner[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := Hex4(inner[i+1:])
			if !ok {
				dst = append(dst, '\\', 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(inner) && inner[i+1] == '\\' && inner[i+2] == 'u' {
					if r2, ok := Hex4(inner[i+3:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, '\\', inner[i])
		}
	}
	return dst
}

// replaceInvalidUTF8 turns every byte that is not part of valid UTF-8
// into U+FFFD, one each, as encoding/json does. Escapes decode to whole
// runes, so doing this after AppendUnescaped equals doing it on the raw
// bytes before.
func replaceInvalidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// Hex4 reads the four hex digits of a \u escape.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
