package jsonfast

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONSeeds = []string{
	`{}`, `[]`, `{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"]}`, ` {"a" : { "b" : [ ] } } `,
	`{not json`, `{"a":1,}`, `[1,]`, `01`, `1.`, `-`, `1e`, `"\x"`, "\"\x01\"", `truex`, `[true false]`,
	`{"a"}`, `{"a":}`, `{1:2}`, `"\u12"`, `[}`, `{]`, `"abc`, ``, ` `, `nul`, `{"a":1}}`, `[[[]]]`,
	"\"\xff\"", `-0.0E-0`, `[` + strings.Repeat("[", 600) + strings.Repeat("]", 601),
}

// FuzzValidJSON pins Valid to json.Valid, the oracle, at every depth.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b)
		if got := Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func TestValidJSONSeeds(t *testing.T) {
	for _, s := range validJSONSeeds {
		want := json.Valid([]byte(s))
		if got := Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}
