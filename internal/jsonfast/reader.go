package jsonfast

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A reflection-free reader, the input side of the appenders in encode.go.
// The per-type readers built on it (in package providers, beside the
// structs they fill) fill the same structs json.Unmarshal fills, for the
// shapes clients actually send; for anything where the two could differ
// (a duplicate or case-folded key, a value of the wrong type, a number
// out of range) the Reader gives up and the caller runs json.Unmarshal,
// so results and error messages stay exactly those of encoding/json.
// Callers check the whole document with Valid first, which lets the
// Reader skip values without validating them again.

// Reader walks one validated document in a single pass; OK turns false at
// the first thing it does not handle. Every reading method takes the index
// where a value starts and returns the index just past it, so per-type
// readers chain them without a cursor of their own.
type Reader struct {
	b []byte
	// s is b as one string: plain string values are cut out of it, so
	// the whole document costs one allocation instead of one per string.
	s  string
	ok bool
}

// NewReader returns a Reader over b, which must already have passed
// Valid: the Reader trusts the document's structure and only refuses
// what encoding/json would read differently.
func NewReader(b []byte) Reader { return Reader{b: b, s: string(b), ok: true} }

// OK reports whether the walk so far read everything exactly as
// encoding/json would; false sends the caller to json.Unmarshal.
func (r *Reader) OK() bool { return r.ok }

// Bytes returns the document, for per-type readers that look at a
// value's first byte or keep a value's raw bytes.
func (r *Reader) Bytes() []byte { return r.b }

// Fail stops the walk; the returned index (the document's end) ends
// every loop, so a reader can return it directly.
func (r *Reader) Fail() int {
	r.ok = false
	return len(r.b)
}

// Object calls fn for each member of the object at i with the key's raw
// bytes (without quotes) and the index of its value; fn returns the index
// just past the value. Keys with escapes or non-ASCII bytes are refused
// because encoding/json matches them after unescaping and Unicode folding.
func (r *Reader) Object(i int, fn func(key []byte, j int) int) int {
	b := r.b
	if !r.ok || b[i] != '{' {
		return r.Fail()
	}
	i = SkipSpace(b, i+1)
	if b[i] == '}' {
		return i + 1
	}
	for r.ok {
		kend, err := SkipString(b, i)
		if err != nil {
			return r.Fail()
		}
		key := b[i+1 : kend-1]
		for _, c := range key {
			if c == '\\' || c >= utf8.RuneSelf {
				return r.Fail()
			}
		}
		i = SkipSpace(b, SkipSpace(b, kend)+1)
		i = SkipSpace(b, fn(key, i))
		if !r.ok {
			break
		}
		if b[i] == '}' {
			return i + 1
		}
		i = SkipSpace(b, i+1)
	}
	return len(b)
}

// Array calls fn for each element of the array at i; fn returns the
// index just past the element.
func (r *Reader) Array(i int, fn func(j int) int) int {
	b := r.b
	if !r.ok || b[i] != '[' {
		return r.Fail()
	}
	i = SkipSpace(b, i+1)
	if b[i] == ']' {
		return i + 1
	}
	for r.ok {
		i = SkipSpace(b, fn(i))
		if !r.ok {
			break
		}
		if b[i] == ']' {
			return i + 1
		}
		i = SkipSpace(b, i+1)
	}
	return len(b)
}

// Skip passes over the value at i without reading it.
func (r *Reader) Skip(i int) int {
	end, err := SkipValue(r.b, i)
	if err != nil {
		return r.Fail()
	}
	return end
}

// Seen refuses a second member with the same key (bit in *mask), which
// encoding/json resolves by decoding into the same value again.
func (r *Reader) Seen(mask *uint32, bit uint32) {
	if *mask&bit != 0 {
		r.ok = false
	}
	*mask |= bit
}

// Unknown skips a member the struct has no field for, unless its key
// differs from a known one only in case (encoding/json would match it).
func (r *Reader) Unknown(i int, key []byte, known ...string) int {
	for _, k := range known {
		if strings.EqualFold(string(key), k) {
			return r.Fail()
		}
	}
	return r.Skip(i)
}

// IsNull reports whether the value at i is null (in a valid document, the
// only value starting with 'n').
func (r *Reader) IsNull(i int) bool { return r.b[i] == 'n' }

// Raw keeps the value at i as it is, sharing the document's bytes.
func (r *Reader) Raw(i int, dst *json.RawMessage) int {
	end := r.Skip(i)
	if r.ok {
		*dst = r.b[i:end:end]
	}
	return end
}

// Str reads a string; null leaves the field as it is, as json.Unmarshal
// does.
func (r *Reader) Str(i int, dst *string) int {
	switch r.b[i] {
	case 'n':
		return i + len("null")
	case '"':
	default:
		return r.Fail()
	}
	end, err := SkipString(r.b, i)
	if err != nil {
		return r.Fail()
	}
	if inner := r.b[i+1 : end-1]; isPlainString(inner) {
		*dst = r.s[i+1 : end-1]
	} else {
		*dst = unescapeJSON(inner)
	}
	return end
}

// StrPtr reads a string into a new pointer; null sets it nil.
func (r *Reader) StrPtr(i int, dst **string) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	s := new(string)
	*dst = s
	return r.Str(i, s)
}

// Bool reads a boolean; null leaves the field as it is, as json.Unmarshal
// does.
func (r *Reader) Bool(i int, dst *bool) int {
	switch r.b[i] {
	case 't':
		*dst = true
		return i + len("true")
	case 'f':
		*dst = false
		return i + len("false")
	case 'n':
		return i + len("null")
	}
	return r.Fail()
}

// BoolPtr reads a boolean into a new pointer; null sets it nil.
func (r *Reader) BoolPtr(i int, dst **bool) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	b := new(bool)
	*dst = b
	return r.Bool(i, b)
}

// Number returns the end of the number token at i, refusing other values.
func (r *Reader) Number(i int) int {
	b := r.b
	if c := b[i]; c != '-' && (c < '0' || c > '9') {
		return r.Fail()
	}
	j := i + 1
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
		j++
	}
	return j
}

// Int reads an integer into an int64 field; null leaves the field as it
// is, as json.Unmarshal does. A fraction, an exponent or an out-of-range
// value fails the walk, because encoding/json rejects those with its own
// error.
func (r *Reader) Int(i int, dst *int64) int {
	if r.IsNull(i) {
		return i + len("null")
	}
	end := r.Number(i)
	if !r.ok {
		return end
	}
	n, err := strconv.ParseInt(string(r.b[i:end]), 10, 64)
	if err != nil {
		return r.Fail()
	}
	*dst = n
	return end
}

// IntPtr reads an integer into a new pointer; null sets it nil.
func (r *Reader) IntPtr(i int, dst **int64) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	var n int64
	end := r.Int(i, &n)
	if r.ok {
		*dst = &n
	}
	return end
}

// FloatPtr reads a number into a new pointer; null sets it nil.
func (r *Reader) FloatPtr(i int, dst **float64) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	end := r.Number(i)
	if !r.ok {
		return end
	}
	f, err := strconv.ParseFloat(string(r.b[i:end]), 64)
	if err != nil {
		return r.Fail()
	}
	*dst = &f
	return end
}

// OrNull reads the value at i into a new *dst with read; null sets *dst
// nil, as encoding/json does for a pointer. read is a closure over r (or a
// method value such as r.Str) rather than a function taking r: r passed
// through an unknown function would escape, costing the caller's Reader
// an allocation.
func OrNull[T any](r *Reader, i int, dst **T, read func(j int, v *T) int) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	*dst = new(T)
	return read(i, *dst)
}

// ListOf reads the array at i into a new *dst, each element with read;
// null sets *dst nil, as encoding/json does for a slice (a null element
// stays zero, which Str does for a string and Object refuses). read is
// bound to r, as for OrNull.
func ListOf[T any](r *Reader, i int, dst *[]T, read func(j int, v *T) int) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	*dst = []T{}
	return r.Array(i, func(e int) int {
		var zero T
		*dst = append(*dst, zero)
		return read(e, &(*dst)[len(*dst)-1])
	})
}
