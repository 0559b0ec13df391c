// Package fakes holds loopback stand-ins for the upstreams the gateway
// talks to, each speaking its real wire format. Tests and the benchmark
// harness share them. Every fake is built the same way, from its options
// and a *Recorder (nil: record nothing), and is an http.Handler:
//
//   - OpenAI: chat completions (JSON and SSE), the Responses API
//     (…/responses) and embeddings (…/embeddings).
//   - Anthropic: Messages (JSON and SSE with event names) and
//     …/count_tokens.
//   - Ollama: the native /api/chat (JSON and NDJSON) and /api/embed.
//   - Gemini: Google's native generateContent, streamGenerateContent,
//     countTokens and batchEmbedContents, keyed by x-goog-api-key.
//   - Bedrock: InvokeModel and its event stream for Claude, checking each
//     request's SigV4 signature.
//   - NewVertex: Vertex AI rawPredict for Claude with its own OAuth token
//     endpoint and metadata server; the *Vertex it returns also counts and
//     revokes the tokens it issued.
//
// Every fake answers deterministically: with a tool call when the request
// offers tools and its last message asks about "weather", else with text.
// Usage figures are fixed per fake so tests can check the ledger exactly.
package fakes

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fixed usage reported by each fake.
const (
	OpenAIPromptTokens     = 11
	OpenAICompletionTokens = 7
	OpenAICachedTokens     = 3 // part of OpenAIPromptTokens

	AnthropicInputTokens   = 13
	AnthropicCacheRead     = 5
	AnthropicCacheCreation = 2
	AnthropicOutputTokens  = 9
	OllamaPromptEvalCount  = 17
	OllamaEvalCount        = 4
	WeatherToolName        = "get_weather"
	WeatherToolArguments   = `{"city":"Oslo"}`
	DefaultReply           = "Hello from the fake upstream."
)

// Options shapes a fake's answers.
type Options struct {
	// Reply is the text answer; default DefaultReply.
	Reply string
	// Chunks splits a streamed reply into this many content events
	// (default: one per word).
	Chunks int
	// Gap is the pause between streamed events.
	Gap time.Duration
	// Status, when non-zero, makes every request fail with it and an
	// error body in the fake's format.
	Status int
	// CutAfter, when non-zero, breaks an Anthropic text stream's
	// connection after that many text deltas, with no end.
	CutAfter int
}

// Recorded is one request a fake received.
type Recorded struct {
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Recorder keeps the requests a fake received.
type Recorder struct {
	mu   sync.Mutex
	reqs []Recorded
}

func (r *Recorder) add(req *http.Request, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, Recorded{Path: req.URL.Path, Query: req.URL.RawQuery, Header: req.Header.Clone(), Body: body})
}

// Requests returns a copy of what was received so far.
func (r *Recorder) Requests() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.reqs...)
}

// Last returns the most recent request, or a zero value.
func (r *Recorder) Last() Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		return Recorded{}
	}
	return r.reqs[len(r.reqs)-1]
}

// Count is the number of requests received.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (o Options) reply() string {
	if o.Reply == "" {
		return DefaultReply
	}
	return o.Reply
}

// pieces splits the reply into the streamed deltas.
func (o Options) pieces() []string {
	text := o.reply()
	if o.Chunks <= 0 {
		words := strings.SplitAfter(text, " ")
		return words
	}
	out := make([]string, 0, o.Chunks)
	size := (len(text) + o.Chunks - 1) / o.Chunks
	if size == 0 {
		size = 1
	}
	for i := 0; i < o.Chunks; i++ {
		lo := i * size
		if lo >= len(text) {
			out = append(out, "")
			continue
		}
		hi := min(lo+size, len(text))
		out = append(out, text[lo:hi])
	}
	return out
}

// wantsTool reports whether the request offers tools and its last
// message mentions the weather, in any of the three formats.
func wantsTool(tools json.RawMessage, messages []json.RawMessage) bool {
	if len(tools) == 0 || string(tools) == "null" || len(messages) == 0 {
		return false
	}
	last := strings.ToLower(string(messages[len(messages)-1]))
	if strings.Contains(last, `"tool"`) || strings.Contains(last, "tool_result") {
		return false
	}
	return strings.Contains(last, "weather")
}

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}

// Pause waits d unless the request is cancelled first; it reports whether
// the request is still wanted.
func Pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
