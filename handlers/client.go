// Package handlers holds Modelgate's plain net/http gateway handlers: the
// chat, messages, responses and Gemini endpoints with their dispatch
// (alias chains, retries, fallbacks) and relay, count_tokens, models and
// health. Who the caller is and what it may spend is package policy's job;
// Caddy modules wrap both.
package handlers

import (
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// PresentedKey is the key a request carries, for policy.Auth.Identify:
// X-Modelgate-Key (a seat, whose Authorization is its provider's), a
// Bearer token, x-api-key, x-goog-api-key, or (the Gemini API's paths
// only) ?key=; "" when it carries none.
func PresentedKey(r *http.Request) string {
	if k := r.Header.Get(upstream.SeatKeyHeader); k != "" {
		// A seat: Authorization carries the provider's credential.
		return strings.TrimSpace(k)
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			return strings.TrimSpace(h[7:])
		}
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	// Google's ?key= is taken on the Gemini API's paths only: a key in a
	// URL ends up in logs and histories, so no other path invites it.
	if isGeminiRequest(r) && r.URL.RawQuery != "" {
		return strings.TrimSpace(r.URL.Query().Get("key"))
	}
	return ""
}

// WriteError answers e in the error shape the caller reads: Bedrock's on
// Bedrock's paths (the AWS SDK reads nothing else, and the Anthropic
// Bedrock SDK shows its message), the family ClientFormat picks elsewhere.
// A refusal written before any handler ran (a missing key) uses it, so a
// caller gets the shape the endpoint itself would have answered in.
func WriteError(w http.ResponseWriter, r *http.Request, e *providers.APIError) {
	if bedrockPath(r.URL.Path) {
		if e.RetryAfter != "" {
			w.Header().Set("Retry-After", e.RetryAfter)
		}
		writeBedrockError(w, e.Status, e.Message)
		return
	}
	e.Write(w, ClientFormat(r))
}

// ClientFormat picks the error family a caller expects: Anthropic for the
// Messages and organization paths, Claude Code's Bedrock and Vertex paths
// (its Anthropic SDK reads an Anthropic error there too) or a request that
// carries anthropic-version, OpenAI otherwise.
func ClientFormat(r *http.Request) providers.Format {
	p := r.URL.Path
	if strings.HasPrefix(p, "/v1/messages") || strings.HasPrefix(p, "/v1/organizations/") || strings.HasPrefix(p, "/model/") || vertexPath(p) {
		return providers.FormatAnthropic
	}
	if strings.HasPrefix(p, "/v1/responses") || strings.HasPrefix(p, "/responses") {
		return providers.FormatResponses
	}
	if isGeminiRequest(r) {
		return providers.FormatGemini
	}
	if r.Header.Get("Anthropic-Version") != "" {
		return providers.FormatAnthropic
	}
	return providers.FormatOpenAI
}
