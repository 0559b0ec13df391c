package secretscan

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// unsafeString views b as a string for matching only: the string must not
// outlive the next change to b.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// appendUnescaped decodes the inside of a JSON string (between the quotes,
// already known to be well formed up to its escapes) as encoding/json
// does: a lone or malformed surrogate becomes U+FFFD, an unknown escape is
// kept as it is.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			dst = append(dst, raw[i])
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
			r, ok := hex4(raw[i+1:])
			if !ok {
				dst = append(dst, '\\', 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2, ok := hex4(raw[i+3:]); ok {
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
			dst = append(dst, '\\', raw[i])
		}
	}
	return dst
}

func hex4(b []byte) (rune, bool) {
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

const hexDigits = "0123456789abcdef"

// appendEscaped writes s as the inside of a JSON string: quotes,
// backslashes and control characters escaped, everything else as it is
// (so invalid UTF-8 the client sent stays what it was).
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
