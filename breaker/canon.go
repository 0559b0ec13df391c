package breaker

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// entryHash names one history entry (a conversation's first entry, the
// head of its history) however the client serialized it: whitespace
// between tokens, the order of members, how strings are escaped and the
// runs of whitespace in them (a re-sent result with a space more) do not
// count. Left out are the cache_control markers a client moves from
// entry to entry. Call ids are kept: they are what tells apart two
// people's conversations that call the same tool with the same result
// (TestSessionlessAppSharingAFirstEntryDoesNotTrip). An entry that is
// not JSON is named by its bytes.
func entryHash(raw []byte) uint64 {
	h, end := canonValue(raw, skipSpace(raw, 0), 0)
	if end < 0 {
		return xxhash.Sum64(raw)
	}
	return h
}

// maxCanonDepth bounds the recursion; deeper values are named by their
// bytes.
const maxCanonDepth = 32

const (
	tagString = 0x9e3779b97f4a7c15
	tagObject = 0xc2b2ae3d27d4eb4f
	tagArray  = 0x165667b19e3779f9
)

// mix is splitmix64's finalizer: it spreads a combined hash's bits, so
// that sums of member hashes do not cancel.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// canonValue hashes the value at b[i] and returns the index after it, or
// -1 for what is not JSON.
func canonValue(b []byte, i, depth int) (uint64, int) {
	if i >= len(b) {
		return 0, -1
	}
	switch c := b[i]; {
	case c == '"':
		return canonString(b, i)
	case (c == '{' || c == '[') && depth < maxCanonDepth:
		if c == '{' {
			return canonObject(b, i, depth)
		}
		return canonArray(b, i, depth)
	}
	end := skipValue(b, i)
	if end < 0 {
		if end = len(b); i >= end || b[i] == '{' || b[i] == '[' {
			return 0, -1
		}
		// A literal that ends the entry, with nothing after it.
	}
	return xxhash.Sum64(b[i:end]), end
}

// canonObject hashes the object at b[i]: the sum of its members' hashes,
// which no order changes.
func canonObject(b []byte, i, depth int) (uint64, int) {
	var sum, n uint64
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return mix(tagObject), i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, -1
		}
		name, end := canonString(b, i)
		if end < 0 {
			return 0, -1
		}
		skip := string(b[i+1:end-1]) == "cache_control"
		if i = skipSpace(b, end); i >= len(b) || b[i] != ':' {
			return 0, -1
		}
		i = skipSpace(b, i+1)
		if skip {
			i = skipValue(b, i)
		} else {
			var v uint64
			v, i = canonValue(b, i, depth+1)
			sum += mix(name ^ mix(v))
			n++
		}
		if i < 0 {
			return 0, -1
		}
		if i = skipSpace(b, i); i >= len(b) {
			return 0, -1
		}
		switch b[i] {
		case '}':
			return mix(sum + n*tagArray + tagObject), i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, -1
		}
	}
}

// canonArray hashes the array at b[i], in order.
func canonArray(b []byte, i, depth int) (uint64, int) {
	h := uint64(tagArray)
	var n uint64
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return mix(h), i + 1
	}
	for {
		var v uint64
		if v, i = canonValue(b, i, depth+1); i < 0 {
			return 0, -1
		}
		h = mix(h^v) + tagString
		n++
		if i = skipSpace(b, i); i >= len(b) {
			return 0, -1
		}
		switch b[i] {
		case ']':
			return mix(h + n), i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, -1
		}
	}
}

// textHash hashes a string's text as canonString reads it: decoded, its
// runs of whitespace one space, none at either end. It lives on the
// caller's stack.
type textHash struct {
	d     xxhash.Digest
	one   [1]byte
	space bool // whitespace before the next byte
	began bool // a byte written: leading whitespace is dropped
}

// twoSpaces ends a run text writes whole.
const twoSpaces = "  "

// text adds raw bytes of a string (between escapes: JSON has no raw
// line break or tab in a string, so its only whitespace is spaces).
// Words with single spaces between them are written whole.
func (w *textHash) text(s []byte) {
	for len(s) > 0 {
		if s[0] == ' ' {
			w.space, s = w.began, s[1:]
			continue
		}
		run := s
		if k := bytes.Index(s, []byte(twoSpaces)); k >= 0 {
			run = s[:k]
		} else if run[len(run)-1] == ' ' {
			run = bytes.TrimRight(run, " ")
		}
		w.flushSpace()
		_, _ = w.d.Write(run)
		w.began = true
		s = s[len(run):]
	}
}

// byte adds one decoded byte.
func (w *textHash) byte(c byte) {
	switch c {
	case ' ', '\n', '\r', '\t':
		w.space = w.began
		return
	}
	w.flushSpace()
	w.one[0] = c
	_, _ = w.d.Write(w.one[:])
	w.began = true
}

func (w *textHash) flushSpace() {
	if w.space {
		w.one[0] = ' '
		_, _ = w.d.Write(w.one[:])
		w.space = false
	}
}

// canonString hashes the string at b[i] (a quote) by its text and
// returns the index after it, or -1.
func canonString(b []byte, i int) (uint64, int) {
	end := skipString(b, i)
	if end < 0 {
		return 0, -1
	}
	var w textHash
	w.d.Reset()
	in := b[i+1 : end-1]
	for len(in) > 0 {
		k := bytes.IndexByte(in, '\\')
		if k < 0 {
			w.text(in)
			break
		}
		w.text(in[:k])
		if k+1 >= len(in) {
			return 0, -1
		}
		n := 2
		switch e := in[k+1]; e {
		case 'n', 't', 'r':
			w.space = w.began
		case 'b':
			w.byte('\b')
		case 'f':
			w.byte('\f')
		case '"', '\\', '/':
			w.byte(e)
		case 'u':
			r, ok := jsonfast.Hex4(in[k+2:])
			if !ok {
				return 0, -1
			}
			n = 6
			if utf16.IsSurrogate(r) && k+7 < len(in) && in[k+6] == '\\' && in[k+7] == 'u' {
				if r2, ok := jsonfast.Hex4(in[k+8:]); ok {
					if rr := utf16.DecodeRune(r, r2); rr != utf8.RuneError {
						r, n = rr, 12
					}
				}
			}
			var u [utf8.UTFMax]byte
			for _, x := range u[:utf8.EncodeRune(u[:], r)] {
				w.byte(x)
			}
		default:
			return 0, -1
		}
		in = in[k+n:]
	}
	return w.d.Sum64() ^ tagString, end
}
