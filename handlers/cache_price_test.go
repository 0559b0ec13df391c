package handlers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/modellist"
)

// redirect sends every request to srv, whatever host it names: an
// OpenAI deployment keeps its cloud api_base (and so its list price)
// while the test answers for it.
type redirect struct{ srv *httptest.Server }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	u, _ := url.Parse(r.srv.URL)
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = u.Scheme, u.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestOpenAICachedInputPrice: OpenAI reports cache reads as
// prompt_tokens_details.cached_tokens inside prompt_tokens; they are
// billed at the model's published cached-input price (gpt-4o: $1.25/M,
// half its $2.50/M input; gpt-4.1: $0.50/M, a quarter of $2/M; gpt-5:
// $0.125/M, a tenth of $1.25/M) and the rest as input.
func TestOpenAICachedInputPrice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":10000,"completion_tokens":100,"total_tokens":10100,"prompt_tokens_details":{"cached_tokens":8000}}}`)
	}))
	t.Cleanup(srv.Close)
	yaml := "model_list:\n" +
		"  - model_name: g4o\n    proxy_params: {model: openai/gpt-4o, api_key: k}\n" +
		"  - model_name: g41\n    proxy_params: {model: openai/gpt-4.1, api_key: k}\n" +
		"  - model_name: g5\n    proxy_params: {model: openai/gpt-5, api_key: k}\n"
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Client = func(*modellist.Deployment) *http.Client { return &http.Client{Transport: redirect{srv}} }
	})
	// Dollars per million tokens: input, cached input, output.
	prices := map[string][3]float64{"g4o": {2.5, 1.25, 10}, "g41": {2, 0.5, 8}, "g5": {1.25, 0.125, 10}}
	for _, alias := range []string{"g4o", "g41", "g5"} {
		if rr := post(g, alice, "/v1/chat/completions", chatBody(alias, false)); rr.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", alias, rr.Code, rr.Body)
		}
		recs := obs.Records()
		r := recs[len(recs)-1]
		p := prices[alias]
		want := int64((p[0]*2000 + p[1]*8000 + p[2]*100) * 1e6)
		if r.InputTokens != 2000 || r.CacheReadTokens != 8000 || r.CostPicoUSD != want {
			t.Errorf("%s: uncached %d, read %d, cost %d pUSD; want 2000, 8000, %d", alias, r.InputTokens, r.CacheReadTokens, r.CostPicoUSD, want)
		}
		if !strings.HasPrefix(r.Provider, "openai") {
			t.Errorf("%s: provider %q", alias, r.Provider)
		}
	}
}
