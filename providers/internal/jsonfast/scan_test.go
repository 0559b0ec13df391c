package jsonfast

import (
	"encoding/json"
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
