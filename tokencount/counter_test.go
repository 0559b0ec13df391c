package tokencount

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/providers"
)

// TestKnownCounts pins the embedded vocabularies to counts published
// elsewhere:
//   - tiktoken tests/test_encoding.py (test_simple, test_simple_regex,
//     test_encode_surrogate_pairs, test_basic_encode): "hello world" is
//     [15339, 1917] in cl100k_base and [31373, 995] in r50k/p50k; "rer",
//     "'rer", "today\n " and "👍" in cl100k_base.
//   - the task brief and spec: "hello world" is 2 tokens in o200k_base.
//   - OpenAI cookbook "How to count tokens with tiktoken": "tiktoken is
//     great!" is [83, 1609, 5963, 374, 2294, 0] in cl100k_base; its
//     compare_encodings table gives "antidisestablishmentarianism" 5/5/6/6,
//     "2 + 2 = 4" 5/5/7/7 and "お誕生日おめでとう" 14/14/9/8 tokens in
//     r50k/p50k/cl100k/o200k.
func TestKnownCounts(t *testing.T) {
	c := New()
	tests := []struct {
		enc  encoding
		text string
		want int
	}{
		{cl100kBase, "hello world", 2},
		{o200kBase, "hello world", 2},
		{r50kBase, "hello world", 2},
		{p50kBase, "hello world", 2},
		{cl100kBase, "rer", 1},
		{cl100kBase, "'rer", 2},
		{cl100kBase, "today\n ", 3},
		{cl100kBase, "👍", 3},
		{cl100kBase, "tiktoken is great!", 6},
		{r50kBase, "antidisestablishmentarianism", 5},
		{p50kBase, "antidisestablishmentarianism", 5},
		{cl100kBase, "antidisestablishmentarianism", 6},
		{o200kBase, "antidisestablishmentarianism", 6},
		{r50kBase, "2 + 2 = 4", 5},
		{cl100kBase, "2 + 2 = 4", 7},
		{o200kBase, "2 + 2 = 4", 7},
		{r50kBase, "お誕生日おめでとう", 14},
		{cl100kBase, "お誕生日おめでとう", 9},
		{o200kBase, "お誕生日おめでとう", 8},
	}
	for _, tt := range tests {
		got, err := c.codec(tt.enc).Count(tt.text)
		if err != nil {
			t.Fatalf("%s %q: %v", tt.enc, tt.text, err)
		}
		if got != tt.want {
			t.Errorf("%s %q = %d tokens, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
	ids, _, err := c.codec(cl100kBase).Encode("tiktoken is great!")
	if err != nil || fmt.Sprint(ids) != "[83 1609 5963 374 2294 0]" {
		t.Errorf("cl100k ids = %v, %v", ids, err)
	}
}

func TestEncodingPerModel(t *testing.T) {
	tests := []struct {
		model string
		want  string
	}{
		{"gpt-4o", "o200k_base"},
		{"gpt-4o-mini", "o200k_base"},
		{"gpt-4o-2024-08-06", "o200k_base"},
		{"chatgpt-4o-latest", "o200k_base"},
		{"gpt-4.1-mini", "o200k_base"},
		{"gpt-4.5-preview", "o200k_base"},
		{"gpt-5", "o200k_base"},
		{"gpt-5-nano", "o200k_base"},
		{"o1", "o200k_base"},
		{"o3-mini", "o200k_base"},
		{"o4-mini-2025-04-16", "o200k_base"},
		{"ft:gpt-4o-mini:org::id", "o200k_base"},
		{"gpt-oss-120b", "o200k_base"},
		{"some-future-model", "o200k_base"},
		{"gpt-4", "cl100k_base"},
		{"gpt-4-32k", "cl100k_base"},
		{"gpt-4-turbo", "cl100k_base"},
		{"gpt-3.5-turbo", "cl100k_base"},
		{"gpt-3.5-turbo-0125", "cl100k_base"},
		{"gpt-35-turbo", "cl100k_base"},
		{"GPT-4", "cl100k_base"},
		{"text-embedding-3-small", "cl100k_base"},
		{"davinci-002", "cl100k_base"},
		{"ft:gpt-3.5-turbo:org::id", "cl100k_base"},
		{"ft:gpt-4-0613:org::id", "cl100k_base"},
		{"text-davinci-003", "p50k_base"},
		{"code-davinci-002", "p50k_base"},
		{"code-cushman-001", "p50k_base"},
		{"text-davinci-edit-001", "p50k_edit"},
		{"code-davinci-edit-001", "p50k_edit"},
		{"davinci", "r50k_base"},
		{"text-curie-001", "r50k_base"},
		{"text-similarity-ada-001", "r50k_base"},
		{"gpt2", "r50k_base"},
	}
	c := New()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello world"}]}`)
	for _, tt := range tests {
		if got := encodingFor(tt.model).String(); got != tt.want {
			t.Errorf("encodingFor(%q) = %s, want %s", tt.model, got, tt.want)
		}
	}
	// Through the public API too, for one model per family.
	for _, model := range []string{"gpt-4o", "gpt-3.5-turbo", "text-davinci-003", "code-davinci-edit-001", "davinci"} {
		n, enc, err := c.CountOpenAI(body, model)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodingFor(model).String(); enc != want {
			t.Errorf("CountOpenAI(%s) encoding = %s, want %s", model, enc, want)
		}
		// "user" and "hello world" are 1 and 2 tokens in every family.
		if n != 3+3+1+2 {
			t.Errorf("CountOpenAI(%s) = %d, want 9", model, n)
		}
	}
}

// TestChatFormula checks the cookbook formula on a hand-computed example:
// priming 3; system message 3 + "system" (1) + "You are terse." (4: "You",
// " are", " ter", "se."); user message 3 + "user" (1) + "hello world" (2).
func TestChatFormula(t *testing.T) {
	c := New()
	if n, _ := c.codec(o200kBase).Count("You are terse."); n != 4 {
		t.Fatalf("premise: %q is %d tokens", "You are terse.", n)
	}
	body := `{"model":"gpt-alias","system":"You are terse.","messages":[{"role":"user","content":"hello world"}],"max_tokens":1024,"stream":true}`
	n, enc, err := c.CountOpenAI([]byte(body), "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 + (3 + 1 + 4) + (3 + 1 + 2); n != want || enc != "o200k_base" {
		t.Errorf("got %d (%s), want %d (o200k_base)", n, enc, want)
	}
	// System as text blocks, and a role:system message as Claude Code sends,
	// count the same as the string form.
	for _, b := range []string{
		`{"model":"m","system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hello world"}]}]}`,
		`{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hello world"}]}`,
	} {
		got, _, err := c.CountOpenAI([]byte(b), "gpt-4o")
		if err != nil || got != n {
			t.Errorf("%s: got %d, %v; want %d", b, got, err, n)
		}
	}
}

func count(t *testing.T, c *Counter, s string) int {
	t.Helper()
	n, err := c.codec(o200kBase).Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestToolsCounted(t *testing.T) {
	c := New()
	base := `{"model":"m","messages":[{"role":"user","content":"What time is it?"}]}`
	withTools := `{"model":"m","messages":[{"role":"user","content":"What time is it?"}],
		"tools":[{"name":"get_time","description":"Current time","input_schema":{"type":"object", "properties":{}},"cache_control":{"type":"ephemeral"}},
		         {"type":"web_search_20250305","name":"web_search","max_uses":5}],
		"tool_choice":{"type":"auto"}}`
	n0, _, err := c.CountOpenAI([]byte(base), "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	n1, _, err := c.CountOpenAI([]byte(withTools), "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	fn := `{"type":"function","function":{"name":"get_time","description":"Current time","parameters":{"type":"object","properties":{}}}}`
	server := `{"type":"web_search_20250305","name":"web_search","max_uses":5}`
	if want := n0 + count(t, c, fn) + count(t, c, server); n1 != want {
		t.Errorf("with tools = %d, want %d (without %d)", n1, want, n0)
	}
}

func TestToolUseAndResult(t *testing.T) {
	c := New()
	body := `{"model":"m","messages":[
		{"role":"user","content":"List the files"},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"I should call ls.","signature":"sig"},
			{"type":"text","text":"Listing."},
			{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command": "ls"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a.go\nb.go"}]},
			{"type":"tool_result","tool_use_id":"toolu_2","content":"done","is_error":true},
			{"type":"text","text":"Thanks"}]}]}`
	n, _, err := c.CountOpenAI([]byte(body), "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	// The earlier turn's thinking is not counted.
	want := 3 +
		3 + count(t, c, "user") + count(t, c, "List the files") +
		3 + count(t, c, "assistant") + count(t, c, "Listing.") + count(t, c, "bash") + count(t, c, `{"command":"ls"}`) +
		3 + count(t, c, "tool") + count(t, c, "a.go\nb.go") +
		3 + count(t, c, "tool") + count(t, c, "done") +
		3 + count(t, c, "user") + count(t, c, "Thanks")
	if n != want {
		t.Errorf("got %d, want %d", n, want)
	}
}

func TestThinkingOnlyInFinalAssistantTurn(t *testing.T) {
	c := New()
	const thought = "Let me think about prime numbers carefully."
	turn := func(final bool) string {
		msgs := `{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"` + thought + `","signature":"s"},{"type":"text","text":"Hello"}]}`
		if !final {
			msgs += `,{"role":"user","content":"Again"}`
		}
		return `{"model":"m","messages":[` + msgs + `]}`
	}
	without := strings.Replace(turn(true), `{"type":"thinking","thinking":"`+thought+`","signature":"s"},`, "", 1)
	n0, _, _ := c.CountOpenAI([]byte(without), "gpt-4o")
	nFinal, _, err := c.CountOpenAI([]byte(turn(true)), "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	// The thought and "Hello" are one text, joined by a newline.
	if want := n0 - count(t, c, "Hello") + count(t, c, thought+"\nHello"); nFinal != want {
		t.Errorf("final turn thinking: got %d, want %d", nFinal, want)
	}
	nEarlier, _, _ := c.CountOpenAI([]byte(turn(false)), "gpt-4o")
	if want := n0 + 3 + count(t, c, "user") + count(t, c, "Again"); nEarlier != want {
		t.Errorf("earlier turn thinking: got %d, want %d", nEarlier, want)
	}
}

// pngHeader is the start of a PNG of the given size: enough for
// image.DecodeConfig, which reads only the IHDR chunk.
func pngHeader(w, h int) string {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestImageTokens follows OpenAI's vision pricing examples: 1024×1024 high
// detail is 765 tokens, 2048×4096 is 1105.
func TestImageTokens(t *testing.T) {
	tests := []struct {
		source string
		want   int
	}{
		{`{"type":"base64","media_type":"image/png","data":"` + pngHeader(1024, 1024) + `"}`, 765},
		{`{"type":"base64","media_type":"image/png","data":"` + pngHeader(2048, 4096) + `"}`, 1105},
		{`{"type":"base64","media_type":"image/png","data":"` + pngHeader(1000, 500) + `"}`, 85 + 170*2},
		{`{"type":"base64","media_type":"image/png","data":"` + pngHeader(100, 100) + `"}`, 85 + 170},
		{`{"type":"url","url":"https://example.com/cat.png"}`, unknownImageTokens},
		{`{"type":"base64","media_type":"image/webp","data":"UklGRg=="}`, unknownImageTokens},
	}
	c := New()
	base, _, _ := c.CountOpenAI([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"}]}]}`), "gpt-4o")
	for _, tt := range tests {
		if got := imageTokens([]byte(tt.source)); got != tt.want {
			t.Errorf("imageTokens(%.60s) = %d, want %d", tt.source, got, tt.want)
		}
		body := `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":` + tt.source + `},{"type":"text","text":"What is this?"}]}]}`
		n, _, err := c.CountOpenAI([]byte(body), "gpt-4o")
		if err != nil {
			t.Fatal(err)
		}
		if n != base+tt.want {
			t.Errorf("body with image: %d, want %d", n, base+tt.want)
		}
	}
}

func TestDocuments(t *testing.T) {
	pdf := "%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >> endobj\n" +
		"2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n3 0 obj <</Type/Page/Parent 1 0 R>> endobj\n%%EOF"
	c := New()
	base, _, _ := c.CountOpenAI([]byte(`{"model":"m","messages":[{"role":"user","content":"Summarize"}]}`), "gpt-4o")
	tests := []struct {
		doc  string
		want int
	}{
		{`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + base64.StdEncoding.EncodeToString([]byte(pdf)) + `"}}`, 2 * pdfPageTokens},
		{`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green."}}`,
			count(t, c, "The grass is green.\nSummarize") - count(t, c, "Summarize")},
		{`{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}`, pdfPageTokens},
	}
	for _, tt := range tests {
		body := `{"model":"m","messages":[{"role":"user","content":[` + tt.doc + `,{"type":"text","text":"Summarize"}]}]}`
		n, _, err := c.CountOpenAI([]byte(body), "gpt-4o")
		if err != nil {
			t.Fatal(err)
		}
		if n != base+tt.want {
			t.Errorf("%.70s: got %d, want %d", tt.doc, n, base+tt.want)
		}
	}
}

func TestBadBodies(t *testing.T) {
	tests := []struct {
		body, param string
	}{
		{`not json`, ""},
		{`[]`, ""},
		{`{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{`{"model":7,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{`{"model":"m"}`, "messages"},
		{`{"model":"m","messages":{}}`, "messages"},
		{`{"model":"m","messages":[]}`, "messages"},
		{`{"model":"m","messages":[{"content":"hi"}]}`, "messages.0.role"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"robot","content":"hi"}]}`, "messages.1.role"},
		{`{"model":"m","messages":[{"role":"user"}]}`, "messages.0.content"},
		{`{"model":"m","messages":[{"role":"user","content":42}]}`, "messages.0.content"},
		{`{"model":"m","messages":[{"role":"user","content":[{"text":"no type"}]}]}`, "messages.0.content.0.type"},
		{`{"model":"m","messages":[{"role":"user","content":["bare string"]}]}`, "messages.0.content.0"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]}`, "messages.0.content.0.name"},
		{`{"model":"m","system":42,"messages":[{"role":"user","content":"hi"}]}`, "system"},
		{`{"model":"m","system":[{"type":"tool_result","tool_use_id":"t"}],"messages":[{"role":"user","content":"hi"}]}`, "system.0.type"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":{}}`, "tools"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"input_schema":{}}]}`, "tools.0.name"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","data":"!!"}}]}]}`, "messages.0.content.0.source.data"},
	}
	c := New()
	for _, tt := range tests {
		for name, run := range map[string]func() error{
			"CountOpenAI": func() error { _, _, err := c.CountOpenAI([]byte(tt.body), "gpt-4o"); return err },
			"Estimate":    func() error { _, err := c.Estimate([]byte(tt.body)); return err },
		} {
			err := run()
			var apiErr *providers.APIError
			if !errors.As(err, &apiErr) {
				t.Errorf("%s(%s): err = %v, want *providers.APIError", name, tt.body, err)
				continue
			}
			if apiErr.Status != 400 || apiErr.Param != tt.param || !strings.HasPrefix(apiErr.Message, tt.param) {
				t.Errorf("%s(%s): status %d param %q message %q, want 400 naming %q", name, tt.body, apiErr.Status, apiErr.Param, apiErr.Message, tt.param)
			}
			if !strings.Contains(string(apiErr.Body(providers.FormatAnthropic)), `"invalid_request_error"`) {
				t.Errorf("%s(%s): not an invalid_request_error", name, tt.body)
			}
		}
	}
}

func TestEstimateIsO200kProxy(t *testing.T) {
	c := New()
	body := []byte(`{"model":"ollama-alias","system":"Be brief.","messages":[{"role":"user","content":"Tell me about gophers."}],"tools":[{"name":"search","input_schema":{"type":"object"}}]}`)
	est, err := c.Estimate(body)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := c.CountOpenAI(body, "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	if est != n {
		t.Errorf("Estimate = %d, o200k count = %d", est, n)
	}
	if cl, _, _ := c.CountOpenAI([]byte(`{"model":"m","messages":[{"role":"user","content":"お誕生日おめでとう"}]}`), "gpt-4"); cl != 3+3+1+9 {
		t.Errorf("cl100k count = %d, want 16", cl)
	}
}

func TestConcurrentUse(t *testing.T) {
	c := New()
	body := claudeCodeBody(4 << 10)
	want, _, err := New().CountOpenAI(body, "gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			model := "gpt-4o"
			if i%2 == 1 {
				model = "gpt-4"
			}
			n, _, err := c.CountOpenAI(body, model)
			if err == nil && model == "gpt-4o" && n != want {
				err = fmt.Errorf("got %d, want %d", n, want)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
