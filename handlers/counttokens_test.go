package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A vLLM deployment's count_tokens goes to its /tokenize with the same
// credentials and extra_headers as its chat requests, and the count comes
// back in Anthropic's shape.
func TestCountTokensUsesTheDeploymentHeaders(t *testing.T) {
	var gotAuth, gotTeam, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotTeam, gotPath = r.Header.Get("Authorization"), r.Header.Get("X-Team"), r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"count":42,"max_model_len":32768,"tokens":[1,2]}`))
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("v", "hosted_vllm/qwen", srv.URL+"/v1", "extra_headers: {X-Team: platform}")
	g, _ := testGateway(t, yaml, nil)
	rec := post(g, alice, "/v1/messages/count_tokens", `{"model":"v","messages":[{"role":"user","content":"hi"}]}`)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"input_tokens":42}` {
		t.Fatalf("count_tokens: %d %s", rec.Code, rec.Body)
	}
	if gotPath != "/tokenize" || gotAuth != "Bearer sk-upstream-secret" || gotTeam != "platform" {
		t.Errorf("tokenize got path %q auth %q X-Team %q; want the deployment's own headers", gotPath, gotAuth, gotTeam)
	}
}
