package secretscan

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/jsonfast"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// FuzzUnescape holds jsonfast.AppendUnescaped to encoding/json on every valid JSON
// string.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\tc\"d\\e\/f"`, `"\u00e9\ud83d\ude00"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00"`, "\"\" "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want string
		if json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		// encoding/json takes whitespace around the literal; the string's
		// own bytes are between its quotes.
		s = strings.Trim(s, " \t\r\n")
		if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
			return
		}
		got := string(jsonfast.AppendUnescaped(nil, []byte(s[1:len(s)-1])))
		if perByteValid(got) != want {
			t.Fatalf("%q: got %q, encoding/json %q", s, got, want)
		}
		// And escaping it again gives a string that decodes to the same.
		var back string
		if err := json.Unmarshal(append(append([]byte{'"'}, appendEscaped(nil, got)...), '"'), &back); err != nil || back != want {
			t.Fatalf("%q: re-escaped decodes to %q (%v)", s, back, err)
		}
	})
}

// FuzzRedactBody: any JSON body comes out as JSON with the same shape;
// a corpus secret put in any string is gone.
func FuzzRedactBody(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"hi"}]}`, 0)
	f.Add(`{"a":["x",{"b":"y\n"}],"tool_use_id":"t"}`, 3)
	f.Add(`["s", 1, true, null, {"k": "v"}]`, 8)
	f.Add(`{"input":{"v":1,"[REDACTED:github-pat:1]":2},"parts":[{"text":"v"},{"text":"v"}]}`, 8)
	rs := rules(f)
	creds := secrettest.Corpus(4)
	f.Fuzz(func(t *testing.T, body string, which int) {
		if !json.Valid([]byte(body)) {
			return
		}
		c := creds[(which%len(creds)+len(creds))%len(creds)]
		// Put the credential into the first string value that is text.
		withSecret := strings.Replace(body, `"v"`, strings.TrimSuffix(strings.TrimPrefix(mustMarshal(c.Text), ""), ""), 1)
		for _, b := range []string{body, withSecret} {
			out, _, err := rs.RedactBody([]byte(b), NewPlaceholders(1, 100).For("f"))
			if err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			var x, y any
			// Numbers stay text: a valid body may hold one no float64
			// can (1e309), and the redactor passes it through as it was.
			if decodeNumbers(out, &y) != nil {
				t.Fatalf("redacted %q is not JSON: %q", b, out)
			}
			_ = decodeNumbers([]byte(b), &x)
			if shape(x) != shape(y) {
				t.Fatalf("shape changed: %q → %q", b, out)
			}
			if b == withSecret && b != body && secrettest.Leaked(string(out), []secrettest.Credential{c}) != "" {
				t.Fatalf("%s left in %q", c.Kind, out)
			}
		}
	})
}

func decodeNumbers(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// shape is a value's structure without its strings: a member's name is
// left out too (a secret in one is renamed), but not how many there are
// (a renamed member stays unique in its object).
func shape(v any) string {
	switch v := v.(type) {
	case map[string]any:
		members := make([]string, 0, len(v))
		for _, m := range v {
			members = append(members, shape(m))
		}
		sort.Strings(members)
		return "{" + strings.Join(members, ",") + "}"
	case []any:
		var b strings.Builder
		b.WriteString("[")
		for _, e := range v {
			b.WriteString(shape(e) + ",")
		}
		return b.String() + "]"
	case string:
		return "s"
	}
	return "x"
}

// FuzzStream: any stream bytes, split anywhere, come out whole: nothing
// lost but what was redacted, every event's data still JSON.
func FuzzStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"hello world\"}}]}\n\ndata: [DONE]\n\n", 5)
	f.Add("event: content_block_delta\ndata: {\"delta\":{\"text\":\"AKIA\"}}\n\nevent: x\ndata: {\"delta\":{\"text\":\"ABCDEFGHIJKLMNOP \"}}\n\n", 17)
	f.Add("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"t\\\":\\\"\\\\u0067\\\\u0068\\\\u0070\\\\u005f\"}}]}}]}\n\n", 40)
	fw := &Firewall{rules: rules(f), names: NewPlaceholders(10, 100)}
	f.Fuzz(func(t *testing.T, in string, split int) {
		sr := fw.NewStream(Redact, fw.names.For("f"))
		split = (split%(len(in)+1) + len(in) + 1) % (len(in) + 1)
		out := sr.Filter(nil, []byte(in[:split]))
		out = sr.Filter(out, []byte(in[split:]))
		out = sr.Finish(out)
		for _, ev := range strings.Split(string(out), "\n\n") {
			for _, line := range strings.Split(ev, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(d, "{") && json.Valid([]byte(strings.TrimSuffix(d, "\r"))) != jsonValidIn(in, d) {
					t.Fatalf("event data changed validity: %q in %q", d, out)
				}
			}
		}
	})
}

// jsonValidIn: a data line of the output is valid JSON unless the input
// had invalid JSON in that place (passed through as it was).
func jsonValidIn(in, d string) bool {
	if strings.Contains(in, d) {
		return json.Valid([]byte(strings.TrimSuffix(d, "\r")))
	}
	return true
}

// perByteValid replaces each invalid byte with U+FFFD, as encoding/json
// does when it decodes a string.
func perByteValid(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// FuzzScan: whatever the text (format characters, hex runs, any bytes),
// hits lie inside it, in order, apart; a github token hidden by format
// characters or hex-encoded at the text's end is still found.
func FuzzScan(f *testing.F) {
	f.Add("token ghp_\u200b" + strings.Repeat("a1B2", 9))
	f.Add("6768705f" + strings.Repeat("61314232", 9))
	f.Add("\xe2\x80\x8b\xe2\x80")
	rs := rules(f)
	p := secrettest.Corpus(5)[8].Value
	f.Fuzz(func(t *testing.T, text string) {
		check := func(text string) []Hit {
			hits := rs.Scan(text)
			last := 0
			for _, h := range hits {
				if h.Start < last || h.End <= h.Start || h.End > len(text) {
					t.Fatalf("%q: hit %+v out of place (%v)", text, h, hits)
				}
				last = h.End
			}
			return hits
		}
		check(text)
		hidden := text + " " + p[:7] + "\u200b" + p[7:]
		if hits := check(hidden); len(hits) == 0 || hits[len(hits)-1].End != len(hidden) {
			t.Fatalf("%q: hidden token not found: %v", hidden, hits)
		}
	})
}
