package jsonfast

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestValidStringToken(t *testing.T) {
	for tok, want := range map[string]bool{
		`""`: true, `"a\"b"`: true, `"\u00e9\n\/"`: true, `"\u00e"`: false, `"\x"`: false,
		"\"a\tb\"": false, `"a"b"`: false, `"abc`: false, `"\"`: false, `"\\"`: true, `x`: false,
	} {
		if got := ValidStringToken([]byte(tok)); got != want {
			t.Errorf("ValidStringToken(%s) = %v", tok, got)
		}
		if want && !json.Valid([]byte(tok)) {
			t.Errorf("%s accepted but not json", tok)
		}
	}
}

// FuzzEachMember pins the scanner to encoding/json on valid objects: the
// members EachMember reports, in order, are the keys json.Decoder reads
// (decoded by DecodeStringToken) and the exact bytes of their values, and
// FindMember picks the last of an ASCII key matched case-insensitively.
// Whole documents skip with SkipValue to their last byte.
func FuzzEachMember(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"model":"a","Model":"b","model":3}`, `{"a\u0062":{"c":[1,{"d":"}"}]},"e":"\\\""}`,
		` { "k" : "v" , "n" : null } `, "{\"\xff\":1,\"\\ud800\":2}", `{"stream_options":{"include_usage":false}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		start := SkipSpace(b, 0)
		end, err := SkipValue(b, start)
		if err != nil || SkipSpace(b, end) != len(b) {
			t.Fatalf("SkipValue(%q) = %d, %v; the value ends at %d", b, end, err, len(bytes.TrimRight(b, " \t\r\n")))
		}
		if b[start] != '{' {
			return
		}
		type member struct {
			key   string
			value string
		}
		var want []member
		dec := json.NewDecoder(bytes.NewReader(b))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			want = append(want, member{k.(string), string(v)})
		}
		var got []member
		end, err = EachMember(b, 0, func(k []byte, v Span) {
			key, ok := DecodeStringToken(k)
			if !ok {
				t.Fatalf("DecodeStringToken(%s) refused a key of a valid document", k)
			}
			got = append(got, member{key, string(b[v.Start:v.End])})
		})
		if err != nil || SkipSpace(b, end) != len(b) {
			t.Fatalf("EachMember(%q) = %d, %v", b, end, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("EachMember(%q) read %q, encoding/json %q", b, got, want)
		}
		for _, m := range want {
			if !isASCII(m.key) {
				continue // KeyIs folds as encoding/json does, not as strings.EqualFold
			}
			s, ok, err := FindMember(b, 0, m.key)
			if err != nil || !ok {
				t.Fatalf("FindMember(%q, %q) = %v, %v", b, m.key, ok, err)
			}
			var last string
			for _, w := range want {
				if strings.EqualFold(w.key, m.key) {
					last = w.value
				}
			}
			if string(b[s.Start:s.End]) != last {
				t.Fatalf("FindMember(%q, %q) = %s, want the last match %s", b, m.key, b[s.Start:s.End], last)
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
