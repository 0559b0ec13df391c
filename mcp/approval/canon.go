// Package approval holds what an MCP tool call's approval is bound to and
// how it is decided, apart from the MCP gateway that waits for it, so the
// admin API decides with the same code as a chat link: the canonical form
// of a call's arguments and its hash, the signed approve/deny link tokens,
// and Decide, which moves a pending approval in the ledger and writes the
// audit event.
package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arguments Canonical accepts.
const MaxDepth = 64

// Canonical is the form of a tool call's arguments an approval is bound
// to and the upstream server is sent: object members sorted by key (byte
// order of their UTF-8), no insignificant whitespace, strings re-escaped
// one way, numbers as written. Absent arguments are {}. It refuses what
// two servers could read differently: invalid JSON or UTF-8, a key given
// twice, a top level other than an object, nesting deeper than MaxDepth,
// a number past float64's range.
// Numbers are kept as written (1.0 and 1 differ), so canonicalising never
// makes two different calls one; at worst an equal call needs its own
// approval.
func Canonical(args []byte) ([]byte, error) {
	// JSON's own whitespace only: a form feed or a no-break space around
	// the object is not JSON, and encoding/json refuses it.
	args = bytes.Trim(args, " \t\r\n")
	if len(args) == 0 || string(args) == "null" {
		return []byte("{}"), nil
	}
	if !utf8.Valid(args) {
		return nil, errors.New("arguments are not valid UTF-8")
	}
	if args[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var out bytes.Buffer
	if err := canonValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("arguments have data after the JSON object")
	}
	return out.Bytes(), nil
}

func canonValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	return canonToken(dec, tok, out, depth)
}

func canonToken(dec *json.Decoder, tok json.Token, out *bytes.Buffer, depth int) error {
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxDepth {
			return fmt.Errorf("arguments nest deeper than %d levels", MaxDepth)
		}
		if t == '[' {
			return canonArray(dec, out, depth+1)
		}
		return canonObject(dec, out, depth+1)
	case string:
		writeString(out, t)
	case json.Number:
		// A number past float64's range is JSON, but servers read it
		// differently (an error, infinity, a big decimal).
		if _, err := strconv.ParseFloat(t.String(), 64); err != nil {
			return errors.New("arguments hold a number too large for a 64-bit float")
		}
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	}
	return nil
}

func canonArray(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	out.WriteByte('[')
	for i := 0; ; i++ {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("arguments are not valid JSON: %v", err)
		}
		if tok == json.Delim(']') {
			out.WriteByte(']')
			return nil
		}
		if i > 0 {
			out.WriteByte(',')
		}
		if err := canonToken(dec, tok, out, depth); err != nil {
			return err
		}
	}
}

func canonObject(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("arguments are not valid JSON: %v", err)
		}
		if tok == json.Delim('}') {
			break
		}
		key, _ := tok.(string)
		var v bytes.Buffer
		if err := canonValue(dec, &v, depth); err != nil {
			return err
		}
		members = append(members, member{key, v.Bytes()})
	}
	slices.SortFunc(members, func(a, b member) int { return bytes.Compare([]byte(a.key), []byte(b.key)) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].key == m.key {
				return fmt.Errorf("arguments give the key %q twice", clip(m.key))
			}
			out.WriteByte(',')
		}
		writeString(out, m.key)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// writeString writes s as a JSON string: ", \ and control characters
// escaped, everything else as it is (so a reader sees the text).
func writeString(out *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out.WriteByte('\\')
			out.WriteByte(c)
		case c == '\n':
			out.WriteString(`\n`)
		case c == '\r':
			out.WriteString(`\r`)
		case c == '\t':
			out.WriteString(`\t`)
		case c < 0x20:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xf])
		default:
			out.WriteByte(c)
		}
	}
	out.WriteByte('"')
}

// clip bounds a client-chosen string in a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Hash is the hex SHA-256 of canonical arguments.
func Hash(canonical []byte) string {
	d := sha256.Sum256(canonical)
	return hex.EncodeToString(d[:])
}
