package approval

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{` {"b": 1, "a": [true, null, "x\u0041"], "c": {"z": 1.50, "y": "é<>&"}} `, `{"a":[true,null,"xA"],"b":1,"c":{"y":"é<>&","z":1.50}}`},
		{`{"s":"line\nbreak\u0001"}`, `{"s":"line\nbreak\u0001"}`},
		{`{"é":1,"e":2,"E":3}`, `{"E":3,"e":2,"é":1}`},
	} {
		got, err := Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`[1]`, "must be a JSON object"},
		{`{"a":1,"a":2}`, `key "a" twice`},
		{`{"a":1}{}`, "data after"},
		{`{"a":}`, "not valid JSON"},
		{"{\"a\":\"\xff\"}", "UTF-8"},
		{strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), "nest deeper"},
	} {
		if _, err := Canonical([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Canonical(%.40s) err = %v, want %q", tc.in, err, tc.want)
		}
	}
	a, _ := Canonical([]byte(`{"word":"kiwi"}`))
	b, _ := Canonical([]byte(`{ "word" : "fig" }`))
	if Hash(a) == Hash(b) {
		t.Error("changed arguments hash the same")
	}
}

// FuzzCanonical: whatever Canonical accepts is valid JSON that means what
// the input meant, and canonical already (a fixed point).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"b":1,"a":[1,2,{"c":null}]}`, `{"s":"\u00e9\n\"\\"}`, `{"n":-1.5e10}`, `{"a":1,"a":2}`, `[]`, "{\"\xff\":1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonical(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Canonical(%q) = %q: not JSON", in, out)
		}
		again, err := Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q → %q (%v)", out, again, err)
		}
		var x, y any
		if len(bytes.TrimSpace(in)) > 0 && string(bytes.TrimSpace(in)) != "null" {
			if json.Unmarshal(in, &x) != nil || json.Unmarshal(out, &y) != nil {
				t.Fatalf("Canonical accepted %q that encoding/json refuses", in)
			}
			xb, _ := json.Marshal(x)
			yb, _ := json.Marshal(y)
			if !bytes.Equal(xb, yb) {
				t.Fatalf("meaning changed: %s vs %s", xb, yb)
			}
		}
	})
}

func TestLinkToken(t *testing.T) {
	id, secret := NewID()
	exp := time.Unix(1900000000, 0)
	tok := Sign(id, true, exp, secret, "binding-1")
	l, err := Parse(tok)
	if err != nil || l.ID != id || !l.Approve || !l.Expires.Equal(exp) {
		t.Fatalf("Parse = %+v, %v", l, err)
	}
	if !l.Verify(secret, "binding-1") {
		t.Fatal("a signed token does not verify")
	}
	if l.Verify(secret, "binding-2") {
		t.Fatal("a token verifies for another binding (changed arguments)")
	}
	_, other := NewID()
	if l.Verify(other, "binding-1") {
		t.Fatal("a token verifies under another approval's secret")
	}
	deny := Sign(id, false, exp, secret, "binding-1")
	// Flipping the decision byte of an approve token must not verify.
	d, _ := Parse(deny)
	forged := Link{ID: d.ID, Approve: true, Expires: d.Expires, mac: d.mac}
	if forged.Verify(secret, "binding-1") {
		t.Fatal("a deny token's MAC approves")
	}
	for _, bad := range []string{"", "v1.", "v2." + tok[3:], tok + "x", tok[:len(tok)-2], strings.Replace(tok, ".", "..", 1), "v1.AAAA.AAAA"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// FuzzLinkToken: Parse never panics, and whatever it accepts signs back to
// the same token under the MAC it carried (one spelling per token).
func FuzzLinkToken(f *testing.F) {
	id, secret := NewID()
	f.Add(Sign(id, true, time.Unix(1900000000, 0), secret, "b"))
	f.Add(Sign("apr_1", false, time.Unix(0, 0), secret, ""))
	f.Add("v1.YQ.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		l, err := Parse(tok)
		if err != nil {
			return
		}
		if l.ID == "" || len(l.mac) != macSize {
			t.Fatalf("Parse(%q) = %+v", tok, l)
		}
		l2, err := Parse(tok)
		if err != nil || l2.ID != l.ID || l2.Approve != l.Approve || !l2.Expires.Equal(l.Expires) {
			t.Fatalf("Parse is not stable on %q", tok)
		}
		p := payload(l.ID, l.Approve, l.Expires)
		if re := tokenPrefix + encodeRaw(p) + "." + encodeRaw(l.mac); re != tok {
			t.Fatalf("two spellings of one token: %q and %q", tok, re)
		}
	})
}

func encodeRaw(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
