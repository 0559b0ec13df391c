package upstream

// Seat pass-through: a passthrough_auth deployment's calls carry the
// caller's own provider credential (a Claude or ChatGPT subscription
// seat) in place of the deployment's, and nothing else of the caller's.

import (
	"context"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/providers"
)

// SeatKeyHeader is where a caller on a seat presents its gateway key, so
// that Authorization and x-api-key stay free for the provider's
// credential.
const SeatKeyHeader = "X-Modelgate-Key"

// seatHeaders are the caller's headers that make up its provider
// credential: Anthropic's bearer token (a subscription's OAuth token) or
// key, and ChatGPT's bearer token with the account it acts for. The
// Anthropic betas the sign-in needs (oauth-…) go through as every
// Anthropic client's betas do (httpEndpoint.authorize).
func seatHeaders() [3]string { return [...]string{"Authorization", "X-Api-Key", "Chatgpt-Account-Id"} }

type seatKey struct{}

// WithSeatCredential marks a request whose gateway key came in
// SeatKeyHeader and whose Authorization and x-api-key, checked to be no
// gateway key, are the caller's own provider credential. Only llm_auth
// sets it: a request without it never has its credential sent upstream.
func WithSeatCredential(ctx context.Context) context.Context {
	return context.WithValue(ctx, seatKey{}, true)
}

// HasSeatCredential reports whether WithSeatCredential marked ctx.
func HasSeatCredential(ctx context.Context) bool {
	v, _ := ctx.Value(seatKey{}).(bool)
	return v
}

// Passthrough reports whether the deployment's calls carry the caller's
// own credential (passthrough_auth).
func (b *Deployment) Passthrough() bool { return b.dep.PassthroughAuth }

// SeatHeaders is the provider credential a seat's request carries (nil
// when it carries none of it), for ClientMeta.Seat: only the door of a
// request marked WithSeatCredential takes it.
func SeatHeaders(client http.Header) http.Header {
	var h http.Header
	for _, k := range seatHeaders() {
		if v := client.Values(k); len(v) > 0 {
			if h == nil {
				h = http.Header{}
			}
			h[k] = v
		}
	}
	return h
}

// seatCredentials puts the caller's provider credential in h in place of
// the deployment's. A caller that did not present one as a seat (its
// gateway key in SeatKeyHeader) is refused: the credential it sent is its
// gateway key, which must never leave the gateway.
func (b *Deployment) seatCredentials(h http.Header, client ClientMeta) error {
	if client.Seat == nil || client.Seat.Get("Authorization") == "" && client.Seat.Get("X-Api-Key") == "" {
		return &providers.APIError{Status: http.StatusUnauthorized, Code: "seat_credential_required",
			Message: "model " + strconv.Quote(b.dep.Alias) + " uses each person's own provider sign-in (passthrough_auth): send the gateway key in " +
				SeatKeyHeader + " and your provider credential in Authorization or x-api-key (Claude Code: ANTHROPIC_CUSTOM_HEADERS; Codex: http_headers)"}
	}
	h.Del("Authorization")
	h.Del("X-Api-Key")
	for k, v := range client.Seat {
		h[k] = append([]string(nil), v...)
	}
	return nil
}
