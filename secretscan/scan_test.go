package secretscan

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

var testRules = sync.OnceValues(Compile)

func rules(t testing.TB) *Rules {
	t.Helper()
	rs, err := testRules()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRuleSetLoads(t *testing.T) {
	rs := rules(t)
	if rs.Count() < 200 {
		t.Fatalf("gitleaks rule set has %d text rules, want at least 200", rs.Count())
	}
}

func TestEveryCorpusKindIsFound(t *testing.T) {
	rs := rules(t)
	for seed := uint64(1); seed <= 20; seed++ {
		for _, c := range secrettest.Corpus(seed) {
			hits := rs.Scan(c.Text)
			if len(hits) == 0 {
				t.Errorf("seed %d: %s not found in %q", seed, c.Kind, c.Text)
				continue
			}
			redacted := redactText(c.Text, hits)
			if k := secrettest.Leaked(redacted, []secrettest.Credential{c}); k != "" {
				t.Errorf("seed %d: %s partly left after redaction: %q (hits %v)", seed, c.Kind, redacted, hits)
			}
		}
	}
}

func redactText(text string, hits []Hit) string {
	var b strings.Builder
	last := 0
	for _, h := range hits {
		b.WriteString(text[last:h.Start])
		b.WriteString("[REDACTED:" + h.Rule + "]")
		last = h.End
	}
	b.WriteString(text[last:])
	return b.String()
}

func TestOrdinaryTextIsNotASecret(t *testing.T) {
	rs := rules(t)
	for _, s := range []string{
		"func BenchmarkHandlersServeChatCompletions100KB(b *testing.B) {",
		"See https://user@example.com/path and http://localhost:8080/v1/models",
		"postgres://app:${DB_PASSWORD}@db:5432/prod",
		"postgres://user:password@localhost/db",
		"git commit 3f2a9c1d4e5b6a7980716253445566778899aabb",
		"id 123e4567-e89b-12d3-a456-426614174000",
		"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
		"The quick brown fox jumps over the lazy dog, again and again.",
	} {
		if hits := rs.Scan(s); len(hits) != 0 {
			t.Errorf("%q: found %v", s, hits)
		}
	}
}

func chatBody(t testing.TB, texts ...string) []byte {
	t.Helper()
	msgs := []any{map[string]any{"role": "system", "content": "You are helpful."}}
	for i, s := range texts {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_" + string(rune('a'+i)), "type": "function", "function": map[string]any{"name": "read", "arguments": `{"path":".env"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_" + string(rune('a'+i)), "content": s})
	}
	b, err := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRedactBodyChat(t *testing.T) {
	rs := rules(t)
	creds := secrettest.Corpus(7)
	var texts []string
	for _, c := range creds {
		texts = append(texts, c.Text)
	}
	body := chatBody(t, texts...)
	names := NewPlaceholders(10, 100).For("s1")
	out, dets, err := rs.RedactBody(body, names)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("redacted body is not JSON: %s", out)
	}
	var decoded struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &decoded); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, m := range decoded.Messages {
		all.WriteString(m.Content + "\n")
	}
	if k := secrettest.Leaked(all.String(), creds); k != "" {
		t.Fatalf("%s reached the redacted body", k)
	}
	if k := secrettest.Leaked(string(out), creds); k != "" {
		t.Fatalf("%s reached the redacted body's bytes", k)
	}
	if len(dets) < len(creds) {
		t.Fatalf("%d detections for %d credentials", len(dets), len(creds))
	}
	d := dets[0]
	if d.Location.Message != 2 || d.Location.ToolCallID != "call_a" || d.Location.Path != "messages[2].content" {
		t.Fatalf("first detection at %+v, want messages[2] tool call call_a", d.Location)
	}
	for _, d := range dets {
		if !strings.HasPrefix(d.Placeholder, "[REDACTED:"+d.Rule+":") {
			t.Fatalf("placeholder %q for rule %s", d.Placeholder, d.Rule)
		}
	}
	// The same body again in the same session: the same placeholders, the
	// same bytes (a prompt cache's prefix survives).
	again, _, err := rs.RedactBody(body, names)
	if err != nil || string(again) != string(out) {
		t.Fatalf("second redaction differs (err %v)", err)
	}
}

func TestSplitByEscapesIsFound(t *testing.T) {
	rs := rules(t)
	c := secrettest.Corpus(3)[0] // an RSA key: its lines travel as \n escapes
	body := chatBody(t, c.Text)
	if !strings.Contains(string(body), `\n`) {
		t.Fatal("test body has no escapes")
	}
	dets, err := rs.ScanBody(body)
	if err != nil || len(dets) == 0 || dets[0].Rule != "private-key" {
		t.Fatalf("dets %v err %v", dets, err)
	}
	// \u escapes of the key's own characters decode before matching too.
	gh := secrettest.Corpus(3)[8].Value
	if !strings.HasPrefix(gh, "ghp_") {
		t.Fatalf("corpus entry 8 is %q, want a ghp_ token", gh)
	}
	esc := `{"messages":[{"role":"user","content":"token \u0067\u0068\u0070_` + gh[4:] + `"}]}`
	dets, err = rs.ScanBody([]byte(esc))
	if err != nil || len(dets) != 1 || dets[0].Rule != "github-pat" {
		t.Fatalf("escaped github token: dets %v err %v", dets, err)
	}
}

func TestIDsAndSignaturesAreLeftAlone(t *testing.T) {
	rs := rules(t)
	sig := "EqQBCkgIARABGAIiQL" + strings.Repeat("x9Kq2Lm7Zp", 10)
	body := `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"` + sig +
		`"},{"type":"tool_use","id":"toolu_01A9xKq2Lm7Zp3Rt8Vb6Nc4D","name":"Read","input":{}}]}]}`
	out, dets, err := rs.RedactBody([]byte(body), NewPlaceholders(1, 1).For("s"))
	if err != nil || len(dets) != 0 || string(out) != body {
		t.Fatalf("dets %v err %v", dets, err)
	}
}

func TestPlaceholdersBounded(t *testing.T) {
	p := NewPlaceholders(2, 2)
	a := p.For("a")
	if a.Placeholder("r", "v1") != "[REDACTED:r:1]" || a.Placeholder("r", "v2") != "[REDACTED:r:2]" || a.Placeholder("r", "v1") != "[REDACTED:r:1]" {
		t.Fatal("numbering not stable")
	}
	if got := a.Placeholder("r", "v3"); got != "[REDACTED:r:1]" {
		t.Fatalf("overflowing session: %s", got)
	}
	p.For("b")
	p.For("c")
	if p.Sessions() != 2 {
		t.Fatalf("%d sessions kept, bound 2", p.Sessions())
	}
}
