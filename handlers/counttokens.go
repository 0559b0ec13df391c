package handlers

import (
	"context"
	"net/http"

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
	d := newHTTPDoor(w, r, cf, cf)
	g.count(r.Context(), &d.call, d)
}

// count answers c, a free token count, to out.
func (g *Gateway) count(ctx context.Context, c *Call, out Sink) {
	req, ok := g.readRequest(ctx, c, out)
	if !ok {
		return
	}
	defer g.releaseRequest(req)
	body, err := req.info.CountBody(req.body)
	if err != nil {
		out.Fail(asAPIError(err))
		return
	}
	g.countTokens(ctx, c, out, req.alias, body)
}

// countTokens counts body, an Anthropic Messages request, for alias, the
// way its first healthy deployment's endpoint counts.
func (g *Gateway) countTokens(ctx context.Context, c *Call, out Sink, alias string, body []byte) {
	cf := c.Format
	bs := g.backends[alias]
	b := bs[0]
	now := g.now()
	for _, d := range bs {
		if d.State().Healthy(now) {
			b = d
			break
		}
	}
	ctx, cancel := context.WithTimeout(ctx, upstream.CountTimeout)
	defer cancel()
	res, apiErr := b.Count(ctx, c.Client, body, g.counter)
	if res.Raw != nil {
		// Anthropic's own answer: its request id goes back even when its
		// count cannot be read.
		relayHeaders(out.Header(), res.Header)
		if cf.CountsAsMessages() {
			sinkJSON(out, http.StatusOK, res.Raw)
			return
		}
	}
	if apiErr != nil {
		out.Fail(apiErr)
		return
	}
	relayHeaders(out.Header(), res.Header)
	sinkJSON(out, http.StatusOK, cf.TokenCount(res.N))
}
