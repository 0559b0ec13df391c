package handlers

import (
	"context"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// serveCountTokens answers Anthropic's count_tokens for any alias without
// running inference: the provider's own free endpoint for anthropic/,
// gemini/, Bedrock and Vertex deployments, tiktoken for OpenAI models, a local server's tokenizer
// where it has one, else a documented estimate. Nothing is recorded.
func (g *Gateway) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	cf := providers.FormatAnthropic
	req, ok := g.readRequest(w, r, cf, IdentityFrom(r.Context()))
	if !ok {
		return
	}
	defer g.releaseRequest(req)
	g.countTokens(w, r, cf, req.alias, req.body)
}

// serveInputTokens is the Responses API's free count
// (POST /v1/responses/input_tokens): the request, history included, is
// put in Messages form and counted as count_tokens counts it.
func (g *Gateway) serveInputTokens(w http.ResponseWriter, r *http.Request) {
	cf := providers.FormatResponses
	req, ok := g.readRequest(w, r, cf, IdentityFrom(r.Context()))
	if !ok {
		return
	}
	defer g.releaseRequest(req)
	body, err := req.info.Responses.CountBody()
	if err != nil {
		asAPIError(err).Write(w, cf)
		return
	}
	g.countTokens(w, r, cf, req.alias, body)
}

// tokenCount renders a count in the caller's shape.
func tokenCount(cf providers.Format, n int) []byte {
	switch cf {
	case providers.FormatResponses:
		return []byte(`{"object":"response.input_tokens","input_tokens":` + strconv.Itoa(n) + `}`)
	case providers.FormatGemini:
		s := strconv.Itoa(n)
		return []byte(`{"totalTokens":` + s + `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":` + s + `}]}`)
	}
	return []byte(`{"input_tokens":` + strconv.Itoa(n) + `}`)
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
		if cf == providers.FormatAnthropic {
			writeJSON(w, http.StatusOK, res.Raw)
			return
		}
	}
	if apiErr != nil {
		apiErr.Write(w, cf)
		return
	}
	relayHeaders(w.Header(), res.Header)
	writeJSON(w, http.StatusOK, tokenCount(cf, res.N))
}
