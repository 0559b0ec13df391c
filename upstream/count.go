package upstream

// Token counts without inference, one strategy per kind of upstream,
// chosen when the endpoint is built (newEndpoint).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/tokencount"
)

// CountTimeout bounds a count, which asks an upstream at most once.
const CountTimeout = 30 * time.Second

// Count counts body, an Anthropic Messages request, the way the
// deployment's endpoint counts for free: the provider's own count, a
// local server's tokenizer, tiktoken for OpenAI models, or local's
// estimate. client is what the caller sent besides the body (its query
// and betas).
func (b *Deployment) Count(ctx context.Context, client ClientMeta, body []byte, local *tokencount.Counter) (CountResult, *providers.APIError) {
	return b.ep.counter().count(ctx, b, countRequest{client: client, body: body, local: local})
}

// tokenCounter counts a Messages request's tokens for one deployment.
type tokenCounter interface {
	// count returns the count, or the error for the client, already
	// without the deployment's secrets.
	count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError)
}

// countRequest is what a count is asked.
type countRequest struct {
	client ClientMeta // the caller's query and Anthropic betas
	body   []byte     // an Anthropic Messages request
	local  *tokencount.Counter
}

// CountResult is a count.
type CountResult struct {
	N int
	// Raw, when set, is Anthropic's own answer, to relay as it is to
	// Anthropic clients even when its count could not be read for others.
	Raw []byte
	// Header is the upstream's answer header, for its request id.
	Header http.Header
}

// estimateCount is the documented estimate, for servers with no tokenizer
// of their own.
type estimateCount struct{}

func (estimateCount) count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError) {
	n, err := req.local.Estimate(req.body)
	return CountResult{N: n}, b.localCountError(ctx, err)
}

// tiktokenCount counts with OpenAI's own vocabularies, for OpenAI models.
type tiktokenCount struct{}

func (tiktokenCount) count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError) {
	n, _, err := req.local.CountOpenAI(req.body, b.dep.Model)
	return CountResult{N: n}, b.localCountError(ctx, err)
}

// serverCount asks a local server's tokenizer (vLLM's, or llama.cpp's),
// falling back to the estimate when the server cannot be asked.
type serverCount struct{ vllm bool }

func (s serverCount) count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError) {
	var n int
	var err error
	if s.vllm {
		n, err = tokencount.CountVLLM(ctx, b.client, b.dep.APIBase, b.header, b.dep.Model, req.body)
	} else {
		n, err = tokencount.CountLlamaCpp(ctx, b.client, b.dep.APIBase, b.header, req.body)
	}
	if err != nil && ctx.Err() == nil && !isClientError(err) {
		n, err = req.local.Estimate(req.body)
	}
	return CountResult{N: n}, b.localCountError(ctx, err)
}

// localCountError is a failed count's error for the client: a timeout
// says so, anything else passes the redaction gate.
func (b *Deployment) localCountError(ctx context.Context, err error) *providers.APIError {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return &providers.APIError{Status: http.StatusGatewayTimeout, Message: fmt.Sprintf("model %q: token counting timed out", b.dep.Alias)}
	}
	return b.Redact(asAPIError(err))
}

func isClientError(err error) bool {
	apiErr, ok := err.(*providers.APIError)
	return ok && apiErr.Status >= 400 && apiErr.Status < 500
}

// anthropicCount forwards to Anthropic's own count_tokens, free.
type anthropicCount struct{}

func (anthropicCount) count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError) {
	out, err := providers.RewriteModel(req.body, b.dep.Model)
	if err != nil {
		return CountResult{}, asAPIError(err)
	}
	up, err := b.NewRequest(ctx, providers.FormatAnthropic, req.client, out, false)
	if err != nil {
		return CountResult{}, &providers.APIError{Status: http.StatusBadGateway, Message: "building upstream request failed"}
	}
	up.URL.Path += "/count_tokens"
	return b.relayCount(up, func(raw []byte) (int, error) {
		var count struct {
			InputTokens *int `json:"input_tokens"`
		}
		if json.Unmarshal(raw, &count) != nil || count.InputTokens == nil {
			return 0, errors.New("no input_tokens")
		}
		return *count.InputTokens, nil
	}, true)
}

// geminiCount asks Google's countTokens, free, for the count of the
// request as the gemini/ deployment will see it: translated by the
// deployment's own Messages route, tools and system instruction included.
type geminiCount struct{ url string }

func (c geminiCount) count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError) {
	gen, _, err := b.Body(providers.FormatAnthropic, req.body, providers.RequestInfo{Model: b.dep.Alias})
	if err != nil {
		return CountResult{}, asAPIError(err)
	}
	out, err := providers.GeminiCountBody(gen, b.dep.Model)
	if err != nil {
		return CountResult{}, asAPIError(err)
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(out))
	if err != nil {
		return CountResult{}, &providers.APIError{Status: http.StatusBadGateway, Message: "building upstream request failed"}
	}
	up.Header = b.header.Clone()
	return b.relayCount(up, providers.GeminiCountResult, false)
}

// cloudCount asks Bedrock's CountTokens or Vertex's count-tokens for the
// count, free on both.
type cloudCount struct{ cc cloudCounter }

func (c cloudCount) count(ctx context.Context, b *Deployment, req countRequest) (CountResult, *providers.APIError) {
	url, out, err := c.cc.prepareCount(req.body, req.client)
	if err != nil {
		return CountResult{}, asAPIError(err)
	}
	up, err := b.postRequest(ctx, providers.FormatAnthropic, req.client, url, out)
	if err != nil {
		var credErr *CredentialError
		if errors.As(err, &credErr) {
			return CountResult{}, b.Redact(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: %s", b.dep.Alias, credErr.msg)})
		}
		return CountResult{}, &providers.APIError{Status: http.StatusBadGateway, Message: "building upstream request failed"}
	}
	return b.relayCount(up, c.cc.countResult, false)
}

// relayCount sends a provider's free token count request and reads the
// count from its answer with read; keepRaw keeps the answer itself
// (Anthropic's, in its clients' shape already).
func (b *Deployment) relayCount(req *http.Request, read func([]byte) (int, error), keepRaw bool) (CountResult, *providers.APIError) {
	resp, err := b.client.Do(req)
	if err != nil {
		return CountResult{}, TransportError(req.Context(), err, b.dep.Alias, CountTimeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		errLimit := int64(1 << 20)
		if keepRaw {
			errLimit = 64 << 10
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, errLimit))
		apiErr := upstreamCountError(b, resp, raw)
		if b.renewer != nil && b.renewer.credentialsRefused(resp.StatusCode, apiErr.Message) {
			b.renewer.rejected() // the next count gets fresh credentials
		}
		return CountResult{}, apiErr
	}
	limit := int64(1 << 20)
	if keepRaw {
		limit = MaxAnswer
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	res := CountResult{Header: resp.Header}
	if keepRaw {
		res.Raw = raw
	}
	if res.N, err = read(raw); err != nil {
		return res, &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream's token count could not be read", b.dep.Alias)}
	}
	return res, nil
}

// upstreamCountError is a failed count's answer: the upstream's status
// and message in the gateway's shape, without the deployment's secrets,
// which some servers echo back.
func upstreamCountError(b *Deployment, resp *http.Response, raw []byte) *providers.APIError {
	status := resp.StatusCode
	if status < 400 {
		return &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream redirected (%d); check the deployment's api_base", b.dep.Alias, status)}
	}
	apiErr := b.ParseError(status, resp.Header, raw)
	apiErr.Status = status
	apiErr.Message = fmt.Sprintf("model %q: upstream returned %d: %s", b.dep.Alias, status, apiErr.Message)
	apiErr.RetryAfter = resp.Header.Get("Retry-After")
	return apiErr
}
