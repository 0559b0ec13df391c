package providers

import (
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// RequestInfo is what the gateway reads from a request body before
// choosing a route: the model alias and whether to stream.
type RequestInfo struct {
	Model        string
	Stream       bool
	IncludeUsage bool
	// Turn is the request parsed whole, for the formats that are not
	// peeked: a *ResponsesTurn, *GeminiTurn, *ConverseTurn or *EmbedTurn, which the routes
	// from those clients translate from and record the answer on. Chat
	// and Messages requests have none.
	Turn Turn
	// maxTokens is a chat or Messages body's max_tokens or
	// max_completion_tokens (the larger), 0 when it sets neither.
	maxTokens int64
	// choices is a chat body's n, 0 when it sets none.
	choices int64
}

// MaxTokens is the body's output bound (max_tokens or
// max_completion_tokens, the larger), 0 when it sets none or the format
// is not peeked.
func (i RequestInfo) MaxTokens() int64 { return i.maxTokens }

// PeekRequest reads model, stream and stream_options.include_usage from an
// OpenAI or Anthropic request body without decoding the rest.
func PeekRequest(body []byte) (RequestInfo, error) {
	var info RequestInfo
	if !jsonfast.Valid(body) {
		return info, invalidJSON(body)
	}
	var model, stream, opts, messages jsonfast.Span
	var hasModel, hasStream, hasOpts, hasMessages bool
	var twice string
	seen := func(has *bool, name string) {
		if *has {
			twice = name
		}
		*has = true
	}
	_, err := jsonfast.EachMember(body, 0, func(k []byte, v jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "model"):
			model = v
			seen(&hasModel, "model")
		case jsonfast.KeyIs(k, "stream"):
			stream = v
			seen(&hasStream, "stream")
		case jsonfast.KeyIs(k, "stream_options"):
			opts = v
			seen(&hasOpts, "stream_options")
		case jsonfast.KeyIs(k, "messages"):
			messages = v
			seen(&hasMessages, "messages")
		case jsonfast.KeyIs(k, "max_tokens") || jsonfast.KeyIs(k, "max_completion_tokens"):
			// As a float too: 1e5 or 100000.0 is the same limit to an
			// upstream, and must not dodge the reservation.
			if f, err := strconv.ParseFloat(string(body[v.Start:v.End]), 64); err == nil && f > 0 {
				info.maxTokens = max(info.maxTokens, int64(min(f, 1<<62)))
			}
		case jsonfast.KeyIs(k, "n"):
			// Each choice is billed its own output: the reservation
			// multiplies the output bound by it.
			if f, err := strconv.ParseFloat(string(body[v.Start:v.End]), 64); err == nil && f > 1 {
				info.choices = int64(min(f, 1<<20))
			}
		}
	})
	if err != nil {
		return info, BadRequest("", "request body must be a JSON object")
	}
	// Parsers disagree on which of two equal keys wins; the gateway and
	// the upstream must read the same request.
	if twice != "" {
		return info, BadRequest(twice, twice+" is given twice; send it once")
	}
	if !hasModel {
		return info, BadRequest("model", "model is required")
	}
	m, ok := jsonfast.DecodeStringToken(body[model.Start:model.End])
	if !ok {
		return info, BadRequest("model", "model must be a string")
	}
	if m == "" {
		return info, BadRequest("model", "model is required")
	}
	if !hasMessages {
		return info, BadRequest("messages", "messages is required: a list of {role, content} objects")
	}
	if body[messages.Start] != '[' {
		return info, BadRequest("messages", "messages must be an array")
	}
	info.Model = m
	// stream and include_usage decide how the answer is framed and read:
	// a "true" string would be read as false here and as true by a lenient
	// upstream, whose stream would then fail as an unreadable answer and
	// count against the deployment's health for everyone.
	if hasStream {
		if info.Stream, ok = jsonfast.ParseBool(body[stream.Start:stream.End]); !ok {
			return info, BadRequest("stream", "stream must be true or false")
		}
	}
	if hasOpts && !opts.IsNull(body) {
		if body[opts.Start] != '{' {
			return info, BadRequest("stream_options", "stream_options must be an object")
		}
		v, ok, err := jsonfast.FindMember(body, opts.Start, "include_usage")
		if err == nil && ok {
			if info.IncludeUsage, ok = jsonfast.ParseBool(body[v.Start:v.End]); !ok {
				return info, BadRequest("stream_options.include_usage", "stream_options.include_usage must be true or false")
			}
		}
	}
	return info, nil
}
