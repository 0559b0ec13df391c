package providers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/apierror"
)

// Every client format has a route to every upstream format, and fits a
// table of FormatCount entries: what a backend builds once per deployment.
func TestClientFormatsRouteEveryUpstream(t *testing.T) {
	seen := map[Format]bool{}
	for _, cf := range ClientFormats() {
		if int(cf) >= FormatCount || seen[cf] {
			t.Fatalf("client format %v out of range or listed twice", cf)
		}
		seen[cf] = true
		for _, up := range []Format{FormatOpenAI, FormatAnthropic, FormatOllama, FormatGemini} {
			if _, err := NewRoute(cf, up); err != nil {
				t.Errorf("%v → %v: %v", cf, up, err)
			}
		}
	}
	if seen[FormatOllama] {
		t.Error("Ollama is an upstream format only")
	}
	if len(seen) != FormatCount-1 {
		t.Errorf("%d client formats, want every format but Ollama (%d)", len(seen), FormatCount-1)
	}
}

// Each client format's parser reads its own body, takes a Gemini URL's
// model and action, and leaves a turn only on the formats parsed whole.
func TestFormatParser(t *testing.T) {
	for _, tc := range []struct {
		f             Format
		body          string
		model, action string
		want          string // the model read
		stream        bool
		turn          string // the turn's type, "" for none
	}{
		{FormatOpenAI, `{"model":"gpt","stream":true,"messages":[]}`, "", "", "gpt", true, ""},
		{FormatAnthropic, `{"model":"claude","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`, "", "", "claude", false, ""},
		{FormatResponses, `{"model":"codex","input":"hi","stream":true}`, "", "", "codex", true, "*providers.ResponsesTurn"},
		{FormatGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "gem", "streamGenerateContent", "gem", true, "*providers.GeminiTurn"},
		{FormatGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "gem", "generateContent", "gem", false, "*providers.GeminiTurn"},
		{FormatEmbeddings, `{"model":"emb","input":"hi"}`, "", "", "emb", false, "*providers.EmbedTurn"},
		{FormatGeminiEmbed, `{"requests":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]}`, "emb", "batchEmbedContents", "emb", false, "*providers.EmbedTurn"},
		{FormatGeminiEmbed, `{"content":{"parts":[{"text":"a"}]}}`, "emb", "embedContent", "emb", false, "*providers.EmbedTurn"},
	} {
		info, err := tc.f.Parser()([]byte(tc.body), tc.model, tc.action)
		if err != nil {
			t.Errorf("%v %s: %v", tc.f, tc.action, err)
			continue
		}
		turn := ""
		if info.Turn != nil {
			turn = typeName(info.Turn)
		}
		if info.Model != tc.want || info.Stream != tc.stream || turn != tc.turn {
			t.Errorf("%v %s: model %q stream %v turn %q, want %q %v %q", tc.f, tc.action, info.Model, info.Stream, turn, tc.want, tc.stream, tc.turn)
		}
	}
	if _, err := FormatAnthropic.Parser()([]byte(`{"model":`), "", ""); err == nil {
		t.Error("a broken body was read")
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *ResponsesTurn:
		return "*providers.ResponsesTurn"
	case *GeminiTurn:
		return "*providers.GeminiTurn"
	case *EmbedTurn:
		return "*providers.EmbedTurn"
	}
	return "?"
}

// A turn takes the alias, names its session and renders its count body
// through RequestInfo; a peeked request has none of it.
func TestRequestInfoTurn(t *testing.T) {
	resp, err := FormatResponses.Parser()([]byte(`{"model":"m","input":"hi","prompt_cache_key":"thread-1"}`), "", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.SetAlias("coder")
	if a := resp.responses().Alias; a != "coder" {
		t.Errorf("responses alias %q", a)
	}
	if k := resp.SessionKey(); k != "thread-1" {
		t.Errorf("session key %q", k)
	}
	body, err := resp.CountBody(nil)
	if err != nil || !json.Valid(body) || !strings.Contains(string(body), `"messages"`) {
		t.Errorf("responses count body %s, %v", body, err)
	}

	gem, err := FormatGemini.Parser()([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`), "m", "countTokens")
	if err != nil {
		t.Fatal(err)
	}
	gem.SetAlias("g-alias")
	if a := gem.gemini().Alias; a != "g-alias" {
		t.Errorf("gemini alias %q", a)
	}
	if body, err := gem.CountBody(nil); err != nil || !strings.Contains(string(body), `"g-alias"`) {
		t.Errorf("gemini count body %s, %v: want the alias as its model", body, err)
	}
	if k := gem.SessionKey(); k != "" {
		t.Errorf("gemini session key %q", k)
	}

	emb, err := FormatEmbeddings.Parser()([]byte(`{"model":"e","input":"hi"}`), "", "")
	if err != nil {
		t.Fatal(err)
	}
	emb.SetAlias("e-alias")
	if a := emb.embed().Alias; a != "e-alias" {
		t.Errorf("embeddings alias %q", a)
	}
	if _, err := emb.CountBody(nil); err == nil {
		t.Error("an embeddings request has no count body")
	}

	chat, err := PeekRequest([]byte(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	chat.SetAlias("x") // no turn: nothing to record it on, and no panic
	msgs := []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if body, err := chat.CountBody(msgs); err != nil || string(body) != string(msgs) {
		t.Errorf("a Messages body counts as sent: %s, %v", body, err)
	}
	if k := chat.SessionKey(); k != "" || chat.KeptResponse() != nil || resp.KeptResponse() != nil {
		t.Error("only a finished, stored Responses turn is kept")
	}
}

// OutputBound is the client's limit, else the default, and none for
// embeddings; Choices multiplies it for Gemini's candidateCount.
func TestOutputBound(t *testing.T) {
	parse := func(f Format, body, model, action string) RequestInfo {
		info, err := f.Parser()([]byte(body), model, action)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	if got := parse(FormatOpenAI, `{"model":"m","messages":[]}`, "", "").OutputBound(4096); got != 4096 {
		t.Errorf("chat without a limit: %d", got)
	}
	if got := parse(FormatOpenAI, `{"model":"m","max_tokens":12,"messages":[]}`, "", "").OutputBound(4096); got != 12 {
		t.Errorf("chat with a limit: %d", got)
	}
	if got := parse(FormatEmbeddings, `{"model":"m","input":"hi"}`, "", "").OutputBound(4096); got != 0 {
		t.Errorf("embeddings: %d", got)
	}
	g := parse(FormatGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"candidateCount":3}}`, "m", "generateContent")
	if got := g.OutputBound(100); got != 100 || g.Choices() != 3 {
		t.Errorf("gemini: bound %d, choices %d", got, g.Choices())
	}
}

// The per-format answers handlers ask for: the rate-limit header family
// and the count and models shapes. (The ledger's endpoint labels are the
// door's table: handlers' TestLedgerEndpointLabelsAreKnown.)
func TestFormatAnswers(t *testing.T) {
	if h := FormatAnthropic.RateLimitHeaders(); h.TokensLimit != "Anthropic-Ratelimit-Tokens-Limit" || !h.ResetAt {
		t.Errorf("anthropic rate headers %+v", h)
	}
	for _, f := range []Format{FormatOpenAI, FormatResponses, FormatGemini} {
		if h := f.RateLimitHeaders(); h.RequestsReset != "X-Ratelimit-Reset-Requests" || h.ResetAt {
			t.Errorf("%v rate headers %+v", f, h)
		}
	}
	for f, want := range map[Format]string{
		FormatAnthropic: `{"input_tokens":7}`,
		FormatResponses: `{"object":"response.input_tokens","input_tokens":7}`,
		FormatGemini:    `{"totalTokens":7,"promptTokensDetails":[{"modality":"TEXT","tokenCount":7}]}`,
	} {
		if got := string(f.TokenCount(7)); got != want {
			t.Errorf("%v count %s, want %s", f, got, want)
		}
	}
	if got := string(FormatAnthropic.ModelList([]string{"a", "b"})); !strings.Contains(got, `"first_id":"a"`) || !strings.Contains(got, `"last_id":"b"`) {
		t.Errorf("anthropic models list %s", got)
	}
	if got := string(FormatOpenAI.ModelList(nil)); got != `{"object":"list","data":[]}` {
		t.Errorf("empty openai models list %s", got)
	}
	if got := string(FormatOpenAI.Model("a")); got != `{"id":"a","object":"model","created":1735689600,"owned_by":"modelgate"}` {
		t.Errorf("openai model %s", got)
	}
}

// TestRateLimitHeaderNamesAreCanonical: the rate-limit headers are set
// into http.Header by name, without Header.Set's canonicalization, so a
// name that is not canonical would make a second header beside a
// canonical one.
func TestRateLimitHeaderNamesAreCanonical(t *testing.T) {
	for _, f := range ClientFormats() {
		n := f.RateLimitHeaders()
		for _, name := range []string{n.RequestsLimit, n.RequestsRemaining, n.RequestsReset, n.TokensLimit, n.TokensRemaining, n.TokensReset} {
			if c := http.CanonicalHeaderKey(name); c != name {
				t.Errorf("%v: %q is not canonical (%q)", f, name, c)
			}
		}
	}
}

// TestFormatErrorFamily: each client format is written errors in the
// family its clients read (Responses and embeddings clients read OpenAI's,
// Gemini's embedContent Google's, Converse Bedrock's).
func TestFormatErrorFamily(t *testing.T) {
	want := map[Format]apierror.Family{
		FormatOpenAI: apierror.OpenAI, FormatAnthropic: apierror.Anthropic, FormatOllama: apierror.OpenAI,
		FormatResponses: apierror.OpenAI, FormatGemini: apierror.Gemini, FormatEmbeddings: apierror.OpenAI,
		FormatGeminiEmbed: apierror.Gemini, FormatConverse: apierror.Bedrock,
	}
	if len(want) != FormatCount {
		t.Fatalf("%d formats named, %d exist", len(want), FormatCount)
	}
	for f, fam := range want {
		if got := f.ErrorFamily(); got != fam {
			t.Errorf("%v: error family %d, want %d", f, got, fam)
		}
	}
}
