package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestEveryAPIPathAnswers: unserved API paths used to end as Caddy's empty
// 200, which the SDKs turn into confusing parse errors; models.retrieve
// had no endpoint at all.
func TestEveryAPIPathAnswers(t *testing.T) {
	up := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: up.modelsYAML()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	oc := openaiClient(g, aliceKey)
	m, err := oc.Models.Get(ctx, "echo")
	if err != nil || m.ID != "echo" || m.Object != "model" {
		t.Fatalf("openai models.retrieve: %+v %v", m, err)
	}
	var oe *openai.Error
	bc := openaiClient(g, bobKey)
	if _, err := bc.Models.Get(ctx, "oa"); !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Code != "model_not_found" {
		t.Fatalf("a model the key may not use: %v, want a clean 404", err)
	}
	var res map[string]any
	err = oc.Post(ctx, "nosuch", map[string]any{"model": "echo"}, &res)
	if !errors.As(err, &oe) || oe.StatusCode != 404 || !strings.Contains(oe.Message, "POST /v1/nosuch") {
		t.Fatalf("openai SDK on an unknown path: %v", err)
	}

	ac := anthropicClient(g, aliceKey, false)
	am, err := ac.Models.Get(ctx, "claude", anthropic.ModelGetParams{})
	if err != nil || am.ID != "claude" || string(am.Type) != "model" {
		t.Fatalf("anthropic models.retrieve: %+v %v", am, err)
	}
	var ae *anthropic.Error
	if _, err := ac.Models.Get(ctx, "nosuch", anthropic.ModelGetParams{}); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("anthropic models.retrieve of an unknown model: %v", err)
	}
	err = ac.Post(ctx, "/v1/messages/nosuch", map[string]any{}, &res)
	if !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(ae.RawJSON(), `"type":"not_found_error"`) {
		t.Fatalf("anthropic SDK on an unknown path: %v", err)
	}

	for _, p := range []string{"//v1/chat/completions", "/v1/chat/completions/", "/v1/nosuch", "/v1/organizations/nosuch"} {
		status, hdr, body := g.do(t, http.MethodPost, p, aliceKey, `{"model":"echo","messages":[]}`)
		if status != http.StatusNotFound || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || !strings.Contains(string(body), p) {
			t.Errorf("POST %s: %d %s", p, status, body)
		}
	}
	// A path outside the API still reaches the site's next handler.
	if status, _, body := g.do(t, http.MethodGet, "/elsewhere", aliceKey, ""); status != http.StatusNotFound || string(body) != "not found" {
		t.Errorf("GET /elsewhere: %d %q, want the site's own respond", status, body)
	}
}

// TestOversizedHeadersLimit pins what docs/failure-handling.md says: Caddy
// 2.11's default header limit is 16 KiB (Go reads 4 KiB past it) and the
// 431 is Go's own.
func TestOversizedHeadersLimit(t *testing.T) {
	up := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: up.modelsYAML()})
	body := `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`
	if st, _, out := g.do(t, http.MethodPost, "/v1/chat/completions", aliceKey, body, "X-Pad", strings.Repeat("a", 8<<10)); st != http.StatusOK {
		t.Fatalf("8 KiB of headers: %d %s", st, out)
	}
	if st, _, _ := g.do(t, http.MethodPost, "/v1/chat/completions", aliceKey, body, "X-Pad", strings.Repeat("a", 40<<10)); st != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("40 KiB of headers: %d, want 431", st)
	}
}
