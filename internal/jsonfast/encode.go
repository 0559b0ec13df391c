package jsonfast

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Appenders that write exactly the bytes encoding/json's Marshal writes
// (HTML-safe escaping, compacted raw values, its float format), so the
// translators can build their output in one buffer without reflection and
// without changing a byte of what clients and upstreams receive.

// AppendMarshalString appends s as json.Marshal would encode it.
func AppendMarshalString[T string | []byte](dst []byte, s T) []byte {
	return AppendQuoted(dst, s, true)
}

// AppendQuoted is the one JSON string encoder: invalid UTF-8 becomes
// U+FFFD and U+2028/U+2029 are escaped, as encoding/json does; html adds
// its escaping of <, > and &.
func AppendQuoted[T string | []byte](dst []byte, s T, html bool) []byte {
	dst = append(dst, '"')
	start, bytewise := 0, 0
	for i := 0; i < len(s); {
		if i >= bytewise {
			// Eight bytes at a time while none needs a look: most of a
			// prompt is plain ASCII, and this loop runs over every byte
			// of every translated request and answer. The word that
			// stopped it is then read byte by byte.
			for i+8 <= len(s) && plain8(load8(s, i), html) {
				i += 8
			}
			if i >= len(s) {
				break
			}
			bytewise = i + 8
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendCompactRaw appends a JSON value that is already known to be valid
// the way json.Marshal writes a json.RawMessage: without insignificant
// whitespace and with <, >, &, U+2028 and U+2029 escaped inside strings.
func AppendCompactRaw(dst, raw []byte) []byte {
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case c == '\\':
				i++ // the escaped byte can be neither a quote nor special
			case c == '"':
				inString = false
			case c == '<' || c == '>' || c == '&':
				dst = append(dst, raw[start:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				start = i + 1
			case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
				dst = append(dst, raw[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xf])
				i += 2
				start = i + 1
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}

// AppendRawOrNull is a json.RawMessage field without omitempty: empty is
// written as null.
func AppendRawOrNull(dst, raw []byte) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	return AppendCompactRaw(dst, raw)
}

// AppendMarshalFloat formats f as encoding/json does for a float64: plain
// decimal in the usual range, exponent form outside it with a short
// exponent.
func AppendMarshalFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 becomes e-7, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// AppendKey writes `"key":`, after a comma unless first; key needs no
// escaping. The member helpers below share first's meaning.
func AppendKey(dst []byte, key string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// AppendStringMember writes a "key":"v" member.
func AppendStringMember(dst []byte, key, v string, first bool) []byte {
	return AppendMarshalString(AppendKey(dst, key, first), v)
}

// AppendStringList writes list as a JSON array of strings.
func AppendStringList(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendMarshalString(dst, s)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string literal: the bytes
// json.Marshal would write, less its HTML escaping of <, > and &, which
// stream events do not need.
func AppendJSONString[T string | []byte](dst []byte, s T) []byte {
	return AppendQuoted(dst, s, false)
}

// AppendInt writes n as json.Marshal writes an integer.
func AppendInt(dst []byte, n int64) []byte {
	return strconv.AppendInt(dst, n, 10)
}

// AppendBool writes true or false.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// load8 reads s[i:i+8] as a little-endian word (the compiler merges the
// byte loads into one).
func load8[T string | []byte](s T, i int) uint64 {
	w := s[i : i+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether every byte of w is printable ASCII that
// AppendQuoted copies as it is: none below 0x20 or above 0x7f, no quote
// or backslash, and with html none of <, > and &. As a whole-word test
// it is exact; which byte failed is left to the byte loop.
func plain8(w uint64, html bool) bool {
	m := w | (w - 0x20*ones) | zeroBytes(w^('"'*ones)) | zeroBytes(w^('\\'*ones))
	if html {
		m |= zeroBytes(w^('<'*ones)) | zeroBytes(w^('>'*ones)) | zeroBytes(w^('&'*ones))
	}
	return m&highs == 0
}

// zeroBytes has the high bit of a byte set where that byte of x is zero
// (and possibly above one that is): non-zero exactly when some byte is.
func zeroBytes(x uint64) uint64 { return (x - ones) &^ x }
