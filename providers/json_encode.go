package providers

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Appenders that write exactly the bytes encoding/json's Marshal writes
// (HTML-safe escaping, compacted raw values, its float format), so the
// translators can build their output in one buffer without reflection and
// without changing a byte of what clients and upstreams receive.

// appendMarshalString appends s as json.Marshal would encode it.
func appendMarshalString[T string | []byte](dst []byte, s T) []byte {
	return appendQuoted(dst, s, true)
}

// appendQuoted is the one JSON string encoder: invalid UTF-8 becomes
// U+FFFD and U+2028/U+2029 are escaped, as encoding/json does; html adds
// its escaping of <, > and &.
func appendQuoted[T string | []byte](dst []byte, s T, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
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

// appendCompactRaw appends a JSON value that is already known to be valid
// the way json.Marshal writes a json.RawMessage: without insignificant
// whitespace and with <, >, &, U+2028 and U+2029 escaped inside strings.
func appendCompactRaw(dst, raw []byte) []byte {
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

// appendRawOrNull is a json.RawMessage field without omitempty: empty is
// written as null.
func appendRawOrNull(dst, raw []byte) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	return appendCompactRaw(dst, raw)
}

// appendMarshalFloat formats f as encoding/json does for a float64: plain
// decimal in the usual range, exponent form outside it with a short
// exponent.
func appendMarshalFloat(dst []byte, f float64) []byte {
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

// The small helpers below write one "key":value member; first says whether
// a comma is needed before it.

func appendKey(dst []byte, key string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

func appendStringMember(dst []byte, key, v string, first bool) []byte {
	return appendMarshalString(appendKey(dst, key, first), v)
}

func appendStringList(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMarshalString(dst, s)
	}
	return append(dst, ']')
}
