package handlers

import (
	"context"
	"net/http"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// serveCountTokens answers Anthropic's count_tokens for any alias without
// running inference: the provider's own free endpoint for anthropic/,
// gemini/, Bedrock and Vertex deployments, tiktoken for OpenAI models, a local server's tokenizer
// where it has one, else a documented estimate. Nothing is recorded.
func (g *Gateway) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	g.serveCount(w, r, providers.FormatAnthropic)
}

// serveInputTokens is the Responses API's free count
// (POST /v1/responses/input_tokens): the request, history included, is
// put in Messages form and counted as count_tokens counts it.
func (g *Gateway) serveInputTokens(w http.ResponseWriter, r *http.Request) {
	g.serveCount(w, r, providers.FormatResponses)
}

// serveCount answers a free token count for a request of cf, counted in
// Messages form (RequestInfo.CountBody) and answered in cf's shape.
func (g *Gateway) serveCount(w http.ResponseWriter, r *http.Request, cf providers.Format) {
	req, ok := g.readRequest(w, r, cf, policy.IdentityFrom(r.Context()))
	if !ok {
		return
	}
	defer g.releaseRequest(req)
	body, err := req.info.CountBody(req.body)
	if err != nil {
		asAPIError(err).Write(w, cf)
		return
	}
	g.countTokens(w, r, cf, req.alias, body)
}

// countTokens counts body, an Anthropic Messages request, for alias, the
// way its first healthy deployment's endpoint counts.
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request, cf providers.Format, alias string, body []byte) {
	bs := g.backends[alias]
	b := bs[0]
	now := g.now()
	for _, c := range bs {
		if c.State().Healthy(now) {
			b = c
			break
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), upstream.CountTimeout)
	defer cancel()
	res, apiErr := b.Count(ctx, r, body, g.counter)
	if res.Raw != nil {
		// Anthropic's own answer: its request id goes back even when its
		// count cannot be read.
		relayHeaders(w.Header(), res.Header)
		if cf.CountsAsMessages() {
			writeJSON(w, http.StatusOK, res.Raw)
			return
		}
	}
	if apiErr != nil {
		apiErr.Write(w, cf)
		return
	}
	relayHeaders(w.Header(), res.Header)
	writeJSON(w, http.StatusOK, cf.TokenCount(res.N))
}
