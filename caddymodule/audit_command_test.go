package caddymodule

import (
	"strings"
	"testing"
)

// TestParseAnchor: --anchor takes the head verify prints, in either case;
// anything else is refused before the chain is read.
func TestParseAnchor(t *testing.T) {
	hash := strings.Repeat("9f86d081", 8)
	for _, in := range []string{"1042:" + hash, "1042:" + strings.ToUpper(hash), " 1042:" + hash + "\n"} {
		a, err := parseAnchor(in)
		if err != nil || a == nil || a.Seq != 1042 || a.Hash != hash {
			t.Errorf("parseAnchor(%q) = %+v, %v; want 1042:%s", in, a, err, hash)
		}
	}
	if a, err := parseAnchor(""); a != nil || err != nil {
		t.Errorf(`parseAnchor("") = %+v, %v; want none`, a, err)
	}
	for _, in := range []string{hash, "0:" + hash, "x:" + hash, "1042:" + hash[:63], "1042:" + hash[:63] + "g", "1042:" + hash + "00"} {
		if a, err := parseAnchor(in); err == nil {
			t.Errorf("parseAnchor(%q) = %+v; want refused", in, a)
		}
	}
}
