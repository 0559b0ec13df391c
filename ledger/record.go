// Package ledger records what every gateway request used and answers the
// organization usage and cost reports from those records.
package ledger

import "time"

// Record is one completed request as the ledger stores it.
type Record struct {
	Time                           time.Time // request start, UTC
	RequestID                      string
	KeyID, Workspace               string
	Alias, UpstreamModel, Provider string   // Alias is the client-facing model_name; reports' model is the alias
	ServiceTier                    string   // "standard" unless the upstream said otherwise
	Endpoint                       Endpoint // the client-facing API the request used
	Stream                         bool

	InputTokens, CacheCreation5m, CacheCreation1h, CacheReadTokens, OutputTokens int64

	Status      int     // HTTP status given to the client (499 when the client went away)
	Outcome     Outcome // how the request ended
	Latency     time.Duration
	TTFT        time.Duration // 0 when no byte was sent
	CostPicoUSD int64         // 1e-12 USD, from Prices.Cost
	// Prices are the per-token prices the cost was computed with. They are
	// stored because the cost report's description grouping splits cost by
	// token type, which the total alone cannot do. Prices.Apply sets both.
	Prices        Prices
	SessionID     string // the coding-agent session, as the client sent it
	Agent         string // who sent it: claude-code, codex, opencode, … ("" unknown)
	ContextWindow string // "0-200k" | "200k-1M"; ContextWindowFor derives it
	// Bytes is what the request carried both ways when tokens do not
	// measure it: an MCP tool call's arguments plus its result as JSON.
	Bytes int64
	// ReportOnly: reports show the cost but no budget counts it: what the
	// client reported of a request the gateway did not serve
	// (EndpointAgentReported), unless the workspace's admin asked for
	// that, or a seat's notional cost (Notional) without
	// passthrough_budget.
	ReportOnly bool
	// DowngradedFrom is the alias the client asked for when a spend limit
	// at its cap sent the request to Alias instead (at_cap downgrade).
	DowngradedFrom string
	// Person is whom the request's key was minted for (or who signed in),
	// Groups their groups the gateway's rules matched, one per line (a
	// string keeps Record comparable): the person's and the groups'
	// spend counts the cost (spend_limits.go). Not stored.
	Person, Groups string
	// Notional: the request was served on the caller's own subscription
	// seat (passthrough_auth), so its cost is what it would have cost at
	// list price, not what the organization pays.
	Notional bool
	// Ticket ties the record to the budget reservation of its request, in
	// this process only; it is not stored. 0: no reservation.
	Ticket uint64
	// Lease is the budget lease the request's estimate, LeasePico, was
	// drawn from (0: none); the record's insert subtracts it from the
	// lease's rows. Not stored either.
	Lease     uint64
	LeasePico int64
}

// Outcome is how a request ended, as the ledger stores it.
type Outcome string

// The outcomes a record can have.
const (
	OutcomeOK        Outcome = "ok"        // the upstream answered and the answer reached the client
	OutcomeError     Outcome = "error"     // the gateway or the upstream failed the request
	OutcomeCancelled Outcome = "cancelled" // the client went away (status 499)
	OutcomeRefused   Outcome = "refused"   // a budget, a rate limit or an unwritable ledger stopped it before any upstream call
)

// Endpoint is the client-facing API a request used, as the ledger stores it.
type Endpoint string

// The endpoints a record can name.
const (
	EndpointChatCompletions Endpoint = "chat_completions" // OpenAI /v1/chat/completions
	EndpointMessages        Endpoint = "messages"         // Anthropic /v1/messages
	EndpointResponses       Endpoint = "responses"        // OpenAI /v1/responses
	EndpointGenerateContent Endpoint = "generate_content" // Gemini generateContent and streamGenerateContent
	EndpointEmbeddings      Endpoint = "embeddings"       // OpenAI /v1/embeddings and Gemini embedContent
	// Claude Code's Bedrock and Vertex modes pointed at the gateway.
	EndpointBedrockInvoke    Endpoint = "bedrock_invoke"     // Bedrock /model/{id}/invoke and invoke-with-response-stream
	EndpointBedrockConverse  Endpoint = "bedrock_converse"   // Bedrock /model/{id}/converse and converse-stream (AWS SDK Converse, LangChain, the AI SDK)
	EndpointVertexRawPredict Endpoint = "vertex_raw_predict" // Vertex …/publishers/anthropic/models/{m}:rawPredict and :streamRawPredict
	EndpointMCP              Endpoint = "mcp"                // an MCP tools/call: Provider is the server, UpstreamModel the tool
	// EndpointSecret is one secret the firewall found: Provider is the
	// rule, UpstreamModel the person (or ""), ServiceTier the action,
	// Agent the direction (request or answer); never the value.
	EndpointSecret Endpoint = "secret_detection"
	// EndpointAgentReported marks a request the gateway did not serve,
	// known from the agent's own OpenTelemetry export (package agentotel).
	EndpointAgentReported Endpoint = "agent_reported"
	// EndpointResponsesWebSocket is the Responses API over a WebSocket at
	// /v1/responses (Codex's preferred transport).
	EndpointResponsesWebSocket Endpoint = "responses_websocket"
	// EndpointBatch is one item of a batch (Anthropic Message Batches,
	// OpenAI Batch) the gateway ran itself (package batch).
	EndpointBatch Endpoint = "batch"
)

// Context window labels used by the reports.
const (
	ContextWindowSmall = "0-200k"
	ContextWindowLarge = "200k-1M"
)

// ContextWindowFor returns the report label for a request whose total input
// (uncached + cache writes + cache reads) was total tokens. Long-context
// pricing starts above 200,000 input tokens, so exactly 200k is still small.
func ContextWindowFor(total int64) string {
	if total > 200_000 {
		return ContextWindowLarge
	}
	return ContextWindowSmall
}

// TotalInput is every input token the request processed.
func (r *Record) TotalInput() int64 {
	return r.InputTokens + r.CacheCreation5m + r.CacheCreation1h + r.CacheReadTokens
}

// TotalTokens is every token the request processed, input and output.
func (r *Record) TotalTokens() int64 {
	return r.TotalInput() + r.OutputTokens
}

// contextWindow is the stored label, derived when the producer left it empty.
func (r *Record) contextWindow() string {
	if r.ContextWindow != "" {
		return r.ContextWindow
	}
	return ContextWindowFor(r.TotalInput())
}

// Prices are picodollars (1e-12 USD) per token, so that prices such as
// $0.075 per million tokens stay integers.
type Prices struct {
	Input, Output, CacheRead, CacheWrite5m, CacheWrite1h int64
}

// Cost is the request's cost in picodollars, saturating at MaxCost: usage
// numbers come from upstreams and are not trusted to be sane.
func (p Prices) Cost(r *Record) int64 {
	return min(MaxCost, costOf(r.InputTokens, p.Input)+
		costOf(r.OutputTokens, p.Output)+
		costOf(r.CacheReadTokens, p.CacheRead)+
		costOf(r.CacheCreation5m, p.CacheWrite5m)+
		costOf(r.CacheCreation1h, p.CacheWrite1h))
}

// Apply records p on r and sets r.CostPicoUSD from it.
func (p Prices) Apply(r *Record) {
	r.Prices = p
	r.CostPicoUSD = p.Cost(r)
}

// IsZero reports whether every price is zero (a local backend).
func (p Prices) IsZero() bool { return p == Prices{} }
