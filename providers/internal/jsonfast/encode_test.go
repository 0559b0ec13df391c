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
