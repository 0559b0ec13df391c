package providers

import "testing"

// OutputLimit reads the client's own output cap in every request format,
// and 0 where it sets none, so budget reservations use the larger bound.
func TestOutputLimit(t *testing.T) {
	peek := func(body string) RequestInfo {
		info, err := PeekRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		{"chat max_tokens", `{"model":"m","max_tokens":100000,"messages":[]}`, 100000},
		{"chat max_completion_tokens", `{"model":"m","messages":[],"max_completion_tokens":2500}`, 2500},
		{"anthropic max_tokens", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`, 64},
		{"none", `{"model":"m","messages":[]}`, 0},
		{"nested max_tokens is not the request's", `{"model":"m","messages":[],"metadata":{"max_tokens":9}}`, 0},
		{"not a number", `{"model":"m","messages":[],"max_tokens":"lots"}`, 0},
		{"written as a float", `{"model":"m","messages":[],"max_tokens":1e5}`, 100000},
		{"beyond int64", `{"model":"m","messages":[],"max_tokens":1e300}`, 1 << 62},
		{"negative", `{"model":"m","messages":[],"max_tokens":-7}`, 0},
	} {
		if got := peek(tc.body).OutputLimit(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	turn, err := ParseResponsesRequest([]byte(`{"model":"m","input":"hi","max_output_tokens":777}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := (RequestInfo{Turn: turn}).OutputLimit(); got != 777 {
		t.Errorf("responses: %d", got)
	}
	g, err := ParseGeminiRequest([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":4242}}`), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.OutputLimit(); got != 4242 {
		t.Errorf("gemini: %d", got)
	}
	if _, err := ParseGeminiRequest([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":-5}}`), "m", false); err == nil {
		t.Error("a negative maxOutputTokens was accepted")
	}
}
