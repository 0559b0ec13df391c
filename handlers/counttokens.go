package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/tokencount"
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
	req, ok := g.readRequest(w, r, cf, IdentityFrom(r.Context()))
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

// countTokens counts body, an Anthropic Messages request, for alias.
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request, cf providers.Format, alias string, body []byte) {
	bs := g.backends[alias]
	b := bs[0]
	now := g.now()
	for _, c := range bs {
		if c.state.healthy(now) {
			b = c
			break
		}
	}
	if b.dep.Kind == modellist.KindAnthropic {
		g.forwardCountTokens(w, r, cf, b, body)
		return
	}
	if b.cloud != nil {
		g.cloudCountTokens(w, r, cf, b, body)
		return
	}
	if b.dep.Kind == modellist.KindGemini {
		g.geminiCountTokens(w, r, cf, b, body)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var n int
	var err error
	switch {
	case b.dep.Kind == modellist.KindOpenAI && !b.dep.Local:
		n, _, err = g.counter.CountOpenAI(body, b.dep.Model)
	case b.dep.Provider == "hosted_vllm":
		n, err = tokencount.CountVLLM(ctx, b.client, b.dep.APIBase, b.header, b.dep.Model, body)
		if err != nil && ctx.Err() == nil && !isClientError(err) {
			n, err = g.counter.Estimate(body)
		}
	case b.dep.Provider == "llamacpp":
		n, err = tokencount.CountLlamaCpp(ctx, b.client, b.dep.APIBase, b.header, body)
		if err != nil && ctx.Err() == nil && !isClientError(err) {
			n, err = g.counter.Estimate(body)
		}
	default:
		n, err = g.counter.Estimate(body)
	}
	if err != nil {
		apiErr := b.upstreamError(asAPIError(err))
		if ctx.Err() != nil {
			apiErr = &providers.APIError{Status: http.StatusGatewayTimeout, Message: fmt.Sprintf("model %q: token counting timed out", alias)}
		}
		apiErr.Write(w, cf)
		return
	}
	writeJSON(w, http.StatusOK, cf.TokenCount(n))
}

// geminiCountTokens asks Google's countTokens, free, for the count of
// the request as the gemini/ deployment will see it: translated by the
// deployment's own Messages route, tools and system instruction included.
func (g *Gateway) geminiCountTokens(w http.ResponseWriter, r *http.Request, cf providers.Format, b *backend, body []byte) {
	gen, _, err := b.upstreamBody(providers.FormatAnthropic, body, providers.RequestInfo{Model: b.dep.Alias})
	if err != nil {
		asAPIError(err).Write(w, cf)
		return
	}
	out, err := providers.GeminiCountBody(gen, b.dep.Model)
	if err != nil {
		asAPIError(err).Write(w, cf)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.countURL, bytes.NewReader(out))
	if err != nil {
		(&providers.APIError{Status: http.StatusBadGateway, Message: "building upstream request failed"}).Write(w, cf)
		return
	}
	req.Header = b.header.Clone()
	g.relayCount(w, cf, b, req, providers.GeminiCountResult)
}

// relayCount sends a provider's free token count request and answers
// with the count read reads from its answer, in the caller's shape.
func (g *Gateway) relayCount(w http.ResponseWriter, cf providers.Format, b *backend, req *http.Request, read func([]byte) (int, error)) {
	resp, err := b.client.Do(req)
	if err != nil {
		g.transportError(req.Context(), err, b.dep.Alias, 30*time.Second).Write(w, cf)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		apiErr := upstreamCountError(b, resp, raw)
		if b.cloud != nil && credentialsRejected(resp.StatusCode, apiErr.Message) {
			b.cloud.rejected() // the next count gets fresh credentials
		}
		apiErr.Write(w, cf)
		return
	}
	n, err := read(raw)
	if err != nil {
		(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream's token count could not be read", b.dep.Alias)}).Write(w, cf)
		return
	}
	relayHeaders(w.Header(), resp.Header)
	writeJSON(w, http.StatusOK, cf.TokenCount(n))
}

// upstreamCountError is a failed count's answer: the upstream's status
// and message in the gateway's shape, without the deployment's secrets,
// which some servers echo back.
func upstreamCountError(b *backend, resp *http.Response, raw []byte) *providers.APIError {
	status := resp.StatusCode
	if status < 400 {
		return &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream redirected (%d); check the deployment's api_base", b.dep.Alias, status)}
	}
	apiErr := b.parseUpstreamError(status, resp.Header, raw)
	apiErr.Status = status
	apiErr.Message = fmt.Sprintf("model %q: upstream returned %d: %s", b.dep.Alias, status, apiErr.Message)
	apiErr.RetryAfter = resp.Header.Get("Retry-After")
	return apiErr
}

func isClientError(err error) bool {
	apiErr, ok := err.(*providers.APIError)
	return ok && apiErr.Status >= 400 && apiErr.Status < 500
}

func (g *Gateway) forwardCountTokens(w http.ResponseWriter, r *http.Request, cf providers.Format, b *backend, body []byte) {
	out, err := providers.RewriteModel(body, b.dep.Model)
	if err != nil {
		asAPIError(err).Write(w, cf)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	req, err := b.newRequest(ctx, providers.FormatAnthropic, r, out, false)
	if err != nil {
		(&providers.APIError{Status: http.StatusBadGateway, Message: "building upstream request failed"}).Write(w, cf)
		return
	}
	req.URL.Path += "/count_tokens"
	resp, err := b.client.Do(req)
	if err != nil {
		g.transportError(ctx, err, b.dep.Alias, 30*time.Second).Write(w, cf)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		upstreamCountError(b, resp, errBody).Write(w, cf)
		return
	}
	relayHeaders(w.Header(), resp.Header)
	if !cf.CountsAsMessages() {
		var count struct {
			InputTokens *int `json:"input_tokens"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(raw, &count) != nil || count.InputTokens == nil {
			(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream's token count could not be read", b.dep.Alias)}).Write(w, cf)
			return
		}
		writeJSON(w, http.StatusOK, cf.TokenCount(*count.InputTokens))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxUpstreamBody))
}

// cloudCountTokens asks Bedrock's CountTokens or Vertex's count-tokens
// for the count, free on both, and answers in the caller's shape.
func (g *Gateway) cloudCountTokens(w http.ResponseWriter, r *http.Request, cf providers.Format, b *backend, body []byte) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	url, out, err := b.cloud.prepareCount(body, r.Header)
	if err != nil {
		asAPIError(err).Write(w, cf)
		return
	}
	req, err := b.cloudRequest(ctx, providers.FormatAnthropic, r, url, out)
	if err != nil {
		var credErr *credentialError
		if errors.As(err, &credErr) {
			b.upstreamError(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: %s", b.dep.Alias, credErr.msg)}).Write(w, cf)
			return
		}
		(&providers.APIError{Status: http.StatusBadGateway, Message: "building upstream request failed"}).Write(w, cf)
		return
	}
	g.relayCount(w, cf, b, req, b.cloud.countResult)
}
