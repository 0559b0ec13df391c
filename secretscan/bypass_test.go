package secretscan

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// The bypasses of hostile review 4, findings 7 and 8: each test failed
// before the walker scanned member names, kept its skip list to the
// formats' own positions, built paths from known names only, joined text
// parts, dropped format characters and decoded hex.

func pat(t testing.TB) string {
	t.Helper()
	v := secrettest.Corpus(3)[8].Value
	if !strings.HasPrefix(v, "ghp_") {
		t.Fatalf("corpus entry 8 is %q, want a ghp_ token", v)
	}
	return v
}

func awsKey(t testing.TB) string {
	t.Helper()
	return secrettest.Corpus(3)[3].Value
}

// toolUse is a Messages body whose assistant turn calls a tool with input.
func toolUse(id, input string) string {
	return `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"` +
		id + `","name":"cfg","input":` + input + `}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}]}`
}

// redactClean redacts body and fails if any secret is left in its bytes,
// or the result is not JSON.
func redactClean(t *testing.T, body string, secrets ...string) (string, []Detection) {
	t.Helper()
	out, dets, err := rules(t).RedactBody([]byte(body), NewPlaceholders(1, 100).For("s"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("redacted body is not JSON: %s", out)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) || strings.Contains(string(out), s[max(len(s)-12, 0):]) {
			t.Fatalf("secret left in %s", out)
		}
	}
	for _, d := range dets {
		for _, s := range secrets {
			if strings.Contains(d.Location.String(), s[max(len(s)-12, 0):]) {
				t.Fatalf("location %q carries the secret", d.Location)
			}
		}
	}
	return string(out), dets
}

func TestSecretAsMemberNameIsRedacted(t *testing.T) {
	p := pat(t)
	out, dets := redactClean(t, toolUse("toolu_1", `{"`+p+`":1}`), p)
	if len(dets) != 1 || dets[0].Rule != "github-pat" {
		t.Fatalf("dets %+v", dets)
	}
	if got := dets[0].Location.Path; got != "messages[1].content[0].input.<member 0>" {
		t.Fatalf("path %q", got)
	}
	var b struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	var blocks []struct {
		Input map[string]int `json:"input"`
	}
	if err := json.Unmarshal(b.Messages[1].Content, &blocks); err != nil {
		t.Fatal(err)
	}
	if v, ok := blocks[0].Input["[REDACTED:github-pat:1]"]; !ok || v != 1 {
		t.Fatalf("input %v", blocks[0].Input)
	}
	// Detect only (log, block) finds it as well.
	if dets, err := rules(t).ScanBody([]byte(toolUse("toolu_1", `{"`+p+`":1}`))); err != nil || len(dets) != 1 {
		t.Fatalf("scan: %v %v", dets, err)
	}
}

func TestRenamedMembersStayUnique(t *testing.T) {
	p := pat(t)
	// The placeholder a renamed member would get is taken already, and the
	// same secret names two members (encoding/json keeps the last).
	input := `{"` + p + `":1,"[REDACTED:github-pat:1]":2,"x` + p + `":3}`
	out, _ := redactClean(t, toolUse("toolu_1", input), p)
	i := strings.Index(out, `"input":`) + len(`"input":`)
	var in map[string]int
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&in); err != nil {
		t.Fatal(err)
	}
	if len(in) != 3 {
		t.Fatalf("input has %d members, want 3: %s", len(in), out)
	}
	seen := map[int]bool{}
	for _, v := range in {
		seen[v] = true
	}
	if !seen[1] || !seen[2] || !seen[3] {
		t.Fatalf("a member was lost: %v", in)
	}
}

func TestToolArgumentsNamedLikeIDsAreScanned(t *testing.T) {
	p := pat(t)
	for name, body := range map[string]string{
		"messages tool_use": toolUse("toolu_2", `{"id":"`+p+`","status":"`+p+`","todos":[{"id":"`+p+`"}]}`),
		"gemini functionCall.args": `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"id":"` + p +
			`","type":"` + p + `"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"status":"` + p + `"}}}]}]}`,
		"converse toolUse.input": `{"messages":[{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{"format":"` + p +
			`"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"json":{"model":"` + p + `"}}]}}]}]}`,
		"type, role and status": `{"model":"m","messages":[{"role":"` + p + `","content":[{"type":"` + p + `","text":"x"}]}],"status":"` + p + `"}`,
		"unknown member":        `{"model":"m","messages":[{"role":"user","content":"x"}],"extra":{"id":"` + p + `"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, dets := redactClean(t, body, p); len(dets) == 0 {
				t.Fatal("nothing found")
			}
		})
	}
}

func TestProtocolIDsAndSignaturesStillLeftAlone(t *testing.T) {
	// A token-shaped value where the formats put ids and signatures is
	// handed back unchanged (an altered signature is a refused request).
	tok := secrettest.Corpus(3)[len(secrettest.Corpus(3))-1].Value // 32 random characters
	for name, body := range map[string]string{
		"messages":  `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"` + tok + `"},{"type":"tool_use","id":"` + tok + `","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + tok + `","content":"ok"}]}]}`,
		"responses": `{"model":"m","input":[{"type":"reasoning","id":"` + tok + `","encrypted_content":"` + tok + `","summary":[]},{"type":"function_call","id":"` + tok + `","call_id":"` + tok + `","name":"f","arguments":"{}","status":"completed"}],"previous_response_id":"` + tok + `"}`,
		"gemini":    `{"contents":[{"role":"model","parts":[{"text":"hi","thoughtSignature":"` + tok + `"},{"functionCall":{"id":"` + tok + `","name":"f","args":{}}}]}]}`,
		"converse":  `{"messages":[{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hm","signature":"` + tok + `"}}},{"toolUse":{"toolUseId":"` + tok + `","name":"f","input":{}}}]}]}`,
		"answer":    `{"id":"` + tok + `","type":"message","role":"assistant","content":[{"type":"tool_use","id":"` + tok + `","name":"f","input":{"a":1}}],"stop_reason":"tool_use"}`,
	} {
		out, dets, err := rules(t).RedactBody([]byte(body), NewPlaceholders(1, 1).For("s"))
		if err != nil || len(dets) != 0 || string(out) != body {
			t.Errorf("%s: dets %v err %v\n%s", name, dets, err, out)
		}
	}
}

func TestLocationsCarryNoValue(t *testing.T) {
	p, aws := pat(t), awsKey(t)
	// Finding 8: a secret as the name holding another secret, and as the
	// tool call's id, printed through the path and the tool call id.
	for _, body := range []string{
		toolUse("toolu_1", `{"`+p+`":"`+aws+`"}`),
		toolUse(p, `{"path":"`+aws+`"}`),
		`{"messages":[{"role":"tool","tool_call_id":"` + p + `","content":"` + aws + `"}]}`,
		`{"metadata":{"` + p + `":{"` + p + `x":"` + aws + `"}}}`,
	} {
		dets, err := rules(t).ScanBody([]byte(body))
		if err != nil || len(dets) == 0 {
			t.Fatalf("%s: dets %v err %v", body, dets, err)
		}
		for _, d := range dets {
			w := d.Location.String() + BlockMessage(d)
			if strings.Contains(w, p[4:16]) || strings.Contains(w, aws[4:16]) {
				t.Fatalf("location %q carries a secret", w)
			}
		}
	}
	// A plain tool call id is still shown.
	dets, _ := rules(t).ScanBody([]byte(toolUse("toolu_1", `{"path":"`+aws+`"}`)))
	if len(dets) != 1 || dets[0].Location.String() != "messages[1].content[0].input.<member 0> (tool call toolu_1)" {
		t.Fatalf("dets %+v", dets)
	}
}

func TestSecretSplitOverTextParts(t *testing.T) {
	p := pat(t)
	a, b, c := p[:20], p[20:30], p[30:]
	for name, body := range map[string]string{
		"messages two blocks": `{"messages":[{"role":"user","content":[{"type":"text","text":"see ` + a + `"},{"type":"text","text":"` + b + c + ` ok"}]}]}`,
		"messages three":      `{"messages":[{"role":"user","content":[{"type":"text","text":"` + a + `"},{"type":"text","text":"` + b + `"},{"type":"text","text":"` + c + `"}]}]}`,
		"chat parts":          `{"messages":[{"role":"user","content":[{"type":"text","text":"` + a + `"},{"type":"text","text":"` + b + c + `"}]}]}`,
		"gemini parts":        `{"contents":[{"role":"user","parts":[{"text":"` + a + `"},{"text":"` + b + c + `"}]}]}`,
		"escaped":             `{"contents":[{"role":"user","parts":[{"text":"line\n` + a + `"},{"text":"` + b + c + `\n"}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			out, dets := redactClean(t, body, p)
			if len(dets) != 1 || dets[0].Rule != "github-pat" {
				t.Fatalf("dets %+v", dets)
			}
			for _, piece := range []string{a[4:], b, c} {
				if strings.Contains(out, piece) {
					t.Fatalf("piece %q left in %s", piece, out)
				}
			}
			if strings.Count(out, "[REDACTED:github-pat:1]") != 1 {
				t.Fatalf("want one placeholder: %s", out)
			}
			if d, _ := rules(t).ScanBody([]byte(body)); len(d) != 1 {
				t.Fatalf("scan only: %v", d)
			}
		})
	}
	// Parts of different messages, or with a non-text part between them,
	// are not one text.
	apart := `{"messages":[{"role":"user","content":[{"type":"text","text":"` + a + `"}]},{"role":"user","content":[{"type":"text","text":"` + b + c + `"}]}]}`
	if d, _ := rules(t).ScanBody([]byte(apart)); len(d) != 0 {
		t.Fatalf("joined across messages: %v", d)
	}
}

func TestFormatCharactersInsideASecret(t *testing.T) {
	p := pat(t)
	for _, zw := range []string{"\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\U000E0041"} {
		hidden := p[:10] + zw + p[10:25] + zw + p[25:]
		body, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "token " + hidden + " end"}}})
		out, dets := redactClean(t, string(body), p[:10], p[10:25], p[25:])
		if len(dets) != 1 || !strings.Contains(out, `"token [REDACTED:github-pat:1] end"`) {
			t.Fatalf("%q: %s %v", zw, out, dets)
		}
	}
	// A streamed answer too.
	fw := &Firewall{rules: rules(t), names: NewPlaceholders(10, 100)}
	f := sseFormats["chat"]
	sr := fw.NewStream(Redact, fw.names.For("z"))
	var out []byte
	hidden := p[:10] + "\u200b" + p[10:]
	for i := 0; i < len(hidden); i += 5 {
		out = sr.Filter(out, []byte(f.delta(hidden[i:min(i+5, len(hidden))])))
	}
	out = sr.Filter(out, []byte(f.delta(" done")))
	for _, ev := range f.close {
		out = sr.Filter(out, []byte(ev))
	}
	out = sr.Finish(out)
	got := streamText(t, out, f.text)
	if strings.Contains(got, p[10:]) || !strings.Contains(got, "[REDACTED:github-pat:1]") {
		t.Fatalf("stream: %q", got)
	}
}

func TestHexEncodedSecret(t *testing.T) {
	p, aws := pat(t), awsKey(t)
	for _, text := range []string{
		"dump: " + hex.EncodeToString([]byte(p)) + " end",
		"0x" + strings.ToUpper(hex.EncodeToString([]byte("GITHUB_TOKEN="+p+"\n"))),
		hex.EncodeToString([]byte("aws_access_key_id = " + aws)),
	} {
		hits := rules(t).Scan(text)
		if len(hits) != 1 {
			t.Fatalf("%q: hits %v", text, hits)
		}
		if red := redactText(text, hits); strings.Contains(red, hex.EncodeToString([]byte(p[8:20]))) || strings.Contains(red, hex.EncodeToString([]byte(aws[8:16]))) {
			t.Fatalf("left in %q", red)
		}
	}
	// Digests and random bytes in hex are not text.
	for _, text := range []string{
		"sha256 " + strings.Repeat("3f2a9c1d4e5b6a79", 4),
		hex.EncodeToString([]byte("The quick brown fox jumps over the lazy dog")),
	} {
		if hits := rules(t).Scan(text); len(hits) != 0 {
			t.Fatalf("%q: hits %v", text, hits)
		}
	}
}

func TestStreamedMemberNameIsRedacted(t *testing.T) {
	// A Gemini stream carries a function call's arguments as an object.
	p := pat(t)
	fw := &Firewall{rules: rules(t), names: NewPlaceholders(10, 100)}
	sr := fw.NewStream(Redact, fw.names.For("n"))
	ev := `data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"` + p + `":"v","id":"` + p + `"}}}]}}]}` + "\r\n\r\n"
	out := string(sr.Finish(sr.Filter(nil, []byte(ev))))
	if strings.Contains(out, p[4:]) {
		t.Fatalf("left in %s", out)
	}
	data := strings.TrimSuffix(strings.TrimPrefix(out, "data: "), "\r\n\r\n")
	if !json.Valid([]byte(data)) {
		t.Fatalf("not JSON: %s", out)
	}
	if len(sr.Detections) != 2 {
		t.Fatalf("detections %+v", sr.Detections)
	}
	for _, d := range sr.Detections {
		if strings.Contains(d.Location.String(), p[4:16]) {
			t.Fatalf("location %q", d.Location)
		}
	}
}

func TestDeepPathIsBounded(t *testing.T) {
	p := pat(t)
	body := strings.Repeat(`{"a":[`, 500) + `"` + p + `"` + strings.Repeat(`]}`, 500)
	dets, err := rules(t).ScanBody([]byte(body))
	if err != nil || len(dets) != 1 {
		t.Fatalf("dets %v err %v", dets, err)
	}
	if n := len(dets[0].Location.Path); n > maxPath+4 || !strings.HasSuffix(dets[0].Location.Path, "<member 0>[0]") {
		t.Fatalf("path of %d bytes: %s", n, dets[0].Location.Path)
	}
}
