package jsonfast

import (
	"bytes"
	"errors"
	"strings"
	"unicode/utf8"
)

// A small JSON scanner for the pass-through paths: it finds a top-level
// member's value without decoding the rest of the body, so a 100 KB request
// costs one linear scan and one splice instead of a decode and re-encode.
// It checks nesting and string boundaries only; callers that need full
// validity run Valid (or json.Valid) first.

// ErrMalformed is the scanner's one error: the bytes are not the JSON
// value the caller asked it to walk. Callers word their own message, so
// it carries no position.
var ErrMalformed = errors.New("malformed json")

// SkipString returns the index just past the string starting at b[i] == '"'.
// Long strings (tool descriptions, file contents) dominate request bodies,
// so it jumps from quote to quote with IndexByte rather than walking bytes.
func SkipString(b []byte, i int) (int, error) {
	open := i
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, ErrMalformed
		}
		j += i
		n := 0
		for k := j - 1; k > open && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		i = j + 1
	}
}

// SkipValue returns the index just past the value starting at b[i]. It
// checks nesting and string boundaries only; callers that need full
// validity run Valid first.
func SkipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrMalformed
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := SkipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, ErrMalformed
	}
	start := i
	for i < len(b) {
		switch c := b[i]; {
		case c == ',' || c == '}' || c == ']' || IsSpace(c):
			if i == start {
				return 0, ErrMalformed
			}
			return i, nil
		}
		i++
	}
	if i == start {
		return 0, ErrMalformed
	}
	return i, nil
}

// Span is a value's byte range within its document, so a caller can read
// or splice the value without copying it out.
type Span struct{ Start, End int }

// IsNull reports whether the value s spans in b is JSON null.
func (s Span) IsNull(b []byte) bool { return string(b[s.Start:s.End]) == "null" }

// EachMember calls fn for every member of the object starting at b[i]
// (after optional space) with the raw key token (quotes included) and the
// value's span, and returns the index just past the object.
func EachMember(b []byte, i int, fn func(key []byte, v Span)) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, ErrMalformed
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, ErrMalformed
		}
		kend, err := SkipString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i:kend]
		i = SkipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrMalformed
		}
		i = SkipSpace(b, i+1)
		vend, err := SkipValue(b, i)
		if err != nil {
			return 0, err
		}
		fn(key, Span{i, vend})
		i = SkipSpace(b, vend)
		if i >= len(b) {
			return 0, ErrMalformed
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, ErrMalformed
		}
		i = SkipSpace(b, i+1)
	}
}

// KeyIs reports whether a raw key token names key the way encoding/json
// matches struct fields: case-insensitively, with Unicode folding. Go
// upstreams (Ollama among them) decode that way, so a "Model" member must
// count as the model or it could slip past a rewrite of "model".
func KeyIs(tok []byte, key string) bool {
	if len(tok) < 2 {
		return false
	}
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			s, ok := DecodeStringToken(tok)
			return ok && strings.EqualFold(s, key)
		}
	}
	if len(inner) != len(key) {
		return false
	}
	for i, c := range inner {
		if c == key[i] {
			continue
		}
		if lc := c | 0x20; lc != key[i]|0x20 || lc < 'a' || lc > 'z' {
			return false
		}
	}
	return true
}

// FindMember returns the span of the last member named key (as KeyIs
// matches it) in the object at b[i]: the last, because encoding/json and
// most decoders keep the last of duplicate keys.
func FindMember(b []byte, i int, key string) (Span, bool, error) {
	var found Span
	ok := false
	_, err := EachMember(b, i, func(k []byte, v Span) {
		if KeyIs(k, key) {
			found, ok = v, true
		}
	})
	if err != nil {
		return Span{}, false, err
	}
	return found, ok, nil
}

// DecodeStringToken returns the Go value of a JSON string token, or false
// when tok is not one well-formed string (the scanner does not validate,
// so a token from it may not be).
func DecodeStringToken(tok []byte) (string, bool) {
	if !ValidStringToken(tok) {
		return "", false
	}
	return Unquote(tok), true
}

// ValidStringToken reports whether tok is one well-formed JSON string, so
// it can be copied into output verbatim without decoding and re-encoding.
func ValidStringToken(tok []byte) bool {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return false
	}
	in := tok[1 : len(tok)-1]
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case c < 0x20 || c == '"':
			return false
		case c == '\\':
			i++
			if i >= len(in) {
				return false
			}
			switch in[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(in) {
					return false
				}
				for _, h := range in[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h|0x20 >= 'a' && h|0x20 <= 'f') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return true
}

// ParseBool reads a JSON boolean token; null reads as false, as a Go bool
// left at its zero value would.
func ParseBool(tok []byte) (v, ok bool) {
	switch string(tok) {
	case "true":
		return true, true
	case "false", "null":
		return false, true
	}
	return false, false
}

// ParseIndex reads a small non-negative integer token (a stream's content
// block index): plain digits only, at most six, so it cannot overflow.
func ParseIndex(tok []byte) (int, bool) {
	if len(tok) == 0 || len(tok) > 6 {
		return 0, false
	}
	n := 0
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Splice returns a new document with the bytes s spans replaced by repl;
// the rest is copied untouched, so an edit costs one copy and no decode.
func Splice(b []byte, s Span, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(s.End-s.Start)+len(repl))
	out = append(out, b[:s.Start]...)
	out = append(out, repl...)
	return append(out, b[s.End:]...)
}
