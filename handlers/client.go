// Package handlers holds Modelgate's plain net/http gateway handlers: the
// chat, messages, responses and Gemini endpoints with their dispatch
// (alias chains, retries, fallbacks) and relay, count_tokens, models and
// health. Who the caller is and what it may spend is package policy's job;
// Caddy modules wrap both.
package handlers

import (
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// PresentedKey is the key a request carries, for policy.Auth.Identify:
// X-Modelgate-Key (a seat, whose Authorization is its provider's), a
// Bearer token, x-api-key, x-goog-api-key, or (the Gemini API's paths
// only: the site's entries in Gemini's family) ?key=; "" when it carries
// none.
func (s *Site) PresentedKey(r *http.Request) string {
	return presentedKey(r, r.URL.RawQuery != "" && s.t.family(r) == providers.FormatGemini)
}

// presentedKey is the key r carries, taking ?key= only when keyInQuery.
func presentedKey(r *http.Request, keyInQuery bool) string {
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
	if keyInQuery && r.URL.RawQuery != "" {
		return strings.TrimSpace(r.URL.Query().Get("key"))
	}
	return ""
}

// callerFormat is the format a caller's headers ask for where the route
// table names no family (the models list, whose shape is the asking
// SDK's, health, /v1/me, a path no entry takes): Anthropic's for a request
// that carries anthropic-version (Claude Code and Anthropic's SDKs),
// OpenAI's otherwise.
func callerFormat(r *http.Request) providers.Format {
	if r.Header.Get("Anthropic-Version") != "" {
		return providers.FormatAnthropic
	}
	return providers.FormatOpenAI
}

// family is the error family r's entry names, nil where it names none.
func (t *routeTable) family(r *http.Request) apierror.Audience {
	e, _ := t.lookup(r)
	return e.family
}
