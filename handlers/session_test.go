package handlers

import (
	"net/http/httptest"
	"testing"

	"github.com/modelgate/modelgate/providers"
)

func TestResolveSessionOrder(t *testing.T) {
	turn, err := providers.ParseResponsesRequest([]byte(`{"model":"m","input":"hi","prompt_cache_key":"thread-9"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		headers   map[string]string
		body      string
		cf        providers.Format
		info      providers.RequestInfo
		id, agent string
	}{
		{"claude header first", map[string]string{"X-Claude-Code-Session-Id": "c1", "Session-Id": "x"}, "", providers.FormatAnthropic, providers.RequestInfo{}, "c1", "claude-code"},
		{"claude metadata, JSON form", nil, `{"metadata":{"user_id":"{\"device_id\":\"ab\",\"account_uuid\":\"\",\"session_id\":\"5f0c\"}"}}`, providers.FormatAnthropic, providers.RequestInfo{}, "5f0c", "claude-code"},
		{"claude metadata, old form", nil, `{"metadata":{"user_id":"user_abc_account__session_1234-abcd"}}`, providers.FormatAnthropic, providers.RequestInfo{}, "1234-abcd", "claude-code"},
		{"codex", map[string]string{"Session-Id": "t1", "Originator": "codex_exec"}, "", providers.FormatResponses, providers.RequestInfo{}, "t1", "codex"},
		{"codex older build", map[string]string{"Session_id": "t2", "User-Agent": "codex_cli_rs/0.40.0 (Linux)"}, "", providers.FormatResponses, providers.RequestInfo{}, "t2", "codex"},
		{"opencode", map[string]string{"X-Session-Id": "o1", "User-Agent": "opencode/0.9 ai-sdk/provider-utils"}, "", providers.FormatOpenAI, providers.RequestInfo{}, "o1", "opencode"},
		{"prompt_cache_key", map[string]string{"User-Agent": "ai-sdk/openai/2.0"}, "", providers.FormatResponses, providers.RequestInfo{Turn: turn}, "thread-9", "ai-sdk"},
		{"unprintable id refused", map[string]string{"X-Claude-Code-Session-Id": "a\x01b"}, "", providers.FormatAnthropic, providers.RequestInfo{}, "", ""},
		{"none", map[string]string{"User-Agent": "curl/8"}, "", providers.FormatOpenAI, providers.RequestInfo{}, "", ""},
	} {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		id, agent := resolveSession(sessionHints(r.Header), []byte(tc.body), tc.cf, tc.info)
		if id != tc.id || agent != tc.agent {
			t.Errorf("%s: (%q, %q), want (%q, %q)", tc.name, id, agent, tc.id, tc.agent)
		}
	}
}
