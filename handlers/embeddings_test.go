package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// TestEmbeddingsFallBackLikeChat: embeddings take the chat path's
// dispatch, so a deployment that is down falls over to the alias's
// fallback, and the answer names the alias the client asked for.
func TestEmbeddingsFallBackLikeChat(t *testing.T) {
	yaml := "model_list:\n" + entry("vectors", closedPortURL(t)) +
		"  - model_name: offline\n    proxy_params:\n      model: echo/echo\n" +
		"router_settings:\n  fallbacks:\n    - vectors: [offline]\n"
	g, _ := testGateway(t, yaml, nil)
	rec := post(g, alice, "/v1/embeddings", `{"model":"vectors","input":["a","b"],"dimensions":3}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"model":"vectors"`) || strings.Count(rec.Body.String(), `"object":"embedding"`) != 2 {
		t.Fatalf("%d %s, want the fallback's two vectors", rec.Code, rec.Body.String())
	}
	// Bad input is the caller's error, named, before any upstream is tried.
	for body, param := range map[string]string{
		`{"model":"vectors"}`:                                     `"param":"input"`,
		`{"model":"vectors","input":[]}`:                          `"param":"input"`,
		`{"model":"vectors","input":"x","encoding_format":"hex"}`: `"param":"encoding_format"`,
		`{"input":"x"}`:                                           `"param":"model"`,
	} {
		if rec := post(g, alice, "/v1/embeddings", body); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), param) {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body.String())
		}
	}
}
