package upstream

import (
	"net/http"
	"slices"
)

// ClientMeta is what an upstream request takes from the client's own
// request besides its body: the few things a pass-through carries on.
// The door fills it from the HTTP request once; every other way in (a
// WebSocket turn, a background run, a cloud envelope) fills it from what
// its caller sent, so the upstream client never sees the inbound
// transport.
type ClientMeta struct {
	// Query is the client URL's raw query: Claude Code's ?beta=true goes
	// on to Anthropic's own API.
	Query string
	// AnthropicVersion and AnthropicBeta are the client's
	// anthropic-version and anthropic-beta header values, which an
	// Anthropic-family upstream receives unless the deployment pins them
	// (a Bedrock body carries the betas instead).
	AnthropicVersion, AnthropicBeta []string
	// Traceparent and Tracestate are the client's W3C trace context,
	// passed on when the gateway has no span of its own.
	Traceparent, Tracestate []string
	// Seat is the caller's own provider credential (SeatHeaders of its
	// request) when llm_auth admitted it as a seat (WithSeatCredential),
	// for a passthrough_auth deployment to send on; nil otherwise.
	Seat http.Header
}

// Clone is m with copies of its header values, for a call that outlives
// the request they were read from (a background run, a WebSocket's
// turns): the door reads them without copying.
func (m ClientMeta) Clone() ClientMeta {
	m.AnthropicVersion, m.AnthropicBeta = slices.Clone(m.AnthropicVersion), slices.Clone(m.AnthropicBeta)
	m.Traceparent, m.Tracestate = slices.Clone(m.Traceparent), slices.Clone(m.Tracestate)
	m.Seat = m.Seat.Clone()
	return m
}
