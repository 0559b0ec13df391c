package jsonfast

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestMarshalHelpers pins the low-level appenders to encoding/json on the
// values where its formatting has special cases.
func TestMarshalHelpers(t *testing.T) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&</a>", "\b\f\n\r\t\x00\x1f\x7f", "é ☃ 😀", "\u2028\u2029", "bad \xff\xc3 \xed\xa0\x80 end", `\"`} {
		want, _ := json.Marshal(s)
		if got := AppendMarshalString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("string %q: got %s, want %s", s, got, want)
		}
		raw, _ := json.Marshal(map[string]any{"k": []any{s, 1.5, nil, true}})
		spaced := bytes.ReplaceAll(raw, []byte(","), []byte(" ,\n\t"))
		want, _ = json.Marshal(json.RawMessage(spaced))
		if got := AppendCompactRaw(nil, spaced); !bytes.Equal(got, want) {
			t.Errorf("raw %s: got %s, want %s", spaced, got, want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, 0.1, 0.3, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789e15, -2.5e-10, 3.4028234663852886e38} {
		want, _ := json.Marshal(f)
		if got := AppendMarshalFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("float %v: got %s, want %s", f, got, want)
		}
	}
}

// FuzzAppendQuoted pins the string encoder, word-at-a-time path and all,
// to encoding/json with and without its HTML escaping, at every offset
// (so each byte falls at each position of an eight-byte word).
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "plain ascii text, long enough for words", "a<b>c&d\"e\\f\x00g\x1fh\x7fi", "é ☃ 😀 \u2028\u2029 \xff\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for off := 0; off < 8 && off <= len(s); off++ {
			sub := s[off:]
			want, _ := json.Marshal(sub)
			if got := AppendQuoted(nil, sub, true); !bytes.Equal(got, want) {
				t.Fatalf("html %q: got %s, want %s", sub, got, want)
			}
			if got := AppendQuoted(nil, []byte(sub), true); !bytes.Equal(got, want) {
				t.Fatalf("html bytes %q: got %s, want %s", sub, got, want)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(sub)
			want = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if got := AppendQuoted(nil, sub, false); !bytes.Equal(got, want) {
				t.Fatalf("plain %q: got %s, want %s", sub, got, want)
			}
		}
	})
}

// BenchmarkAppendQuoted is a 2 KB system prompt, the bulk of a translated
// request's bytes.
func BenchmarkAppendQuoted(b *testing.B) {
	s := "You are the platform team's assistant. " + string(bytes.Repeat([]byte("Answer briefly and precisely, with code where it helps.\n"), 36))
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendQuoted(buf[:0], s, true)
	}
}
