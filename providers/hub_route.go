package providers

import "fmt"

// spoke is a client format that reaches upstreams through the hub, chat
// completions: one pair of translators to and from chat, plus the one
// deliberate exception, answers read straight from Anthropic. hubRoute
// composes a spoke with the chat client's route to any upstream, so a
// new client format is one spoke, not a row of the matrix.
type spoke interface {
	// toChat writes the client's request as a chat request for
	// model, with usage asked for when it streams.
	toChat(body []byte, info RequestInfo, model string, o chatOptions) ([]byte, error)
	// fromChat turns a whole chat answer into the client's, and reads
	// the ledger usage from it (used when the upstream speaks chat).
	fromChat(chat []byte, info RequestInfo) ([]byte, Usage, error)
	// fromAnthropic turns a whole Anthropic answer into the client's
	// without going through chat; see hubRoute for why.
	fromAnthropic(raw []byte, info RequestInfo) ([]byte, Usage, error)
	// newStream turns a stream of chat chunks into the client's stream.
	newStream(model string, info RequestInfo) StreamTranslator
}

// chatStreamReader is a spoke whose stream translator reads a chat
// upstream's chunks itself (checks each, turns in-band errors into
// APIErrors, counts usage and sees the ending), so a chat upstream's
// stream reaches it without the chat pass-through in front.
type chatStreamReader interface {
	readsChatStream()
}

// hubRoute reaches upstream from the spoke's clients through the hub:
// the request is written as chat, which every upstream format has a route
// from, and the answer comes back through that route as chat and is
// turned into the client's (docs/architecture.md, "The translation matrix
// and the hub").
//
// Anthropic upstreams are the one exception. Thinking and its signatures
// have no standard chat form, and a client that sends them back (in a
// Responses reasoning item or a Gemini thoughtSignature) must get them
// intact for Anthropic to accept the next turn. So whole Anthropic answers
// go straight to the spoke (fromAnthropic), and streams go through the
// hub's thinking deltas (newAnthropicToHubStream: reasoning_content,
// reasoning_signature, reasoning_redacted) rather than the chat client's
// stream translator, which drops them.
func hubRoute(client, upstream Format, s spoke) (Route, error) {
	hub, err := NewRoute(FormatOpenAI, upstream)
	if err != nil {
		return Route{}, fmt.Errorf("no route from %s clients to %s upstreams", client, upstream)
	}
	hubInfo := func(model string, stream bool) RequestInfo {
		return RequestInfo{Model: model, Stream: stream, IncludeUsage: true}
	}
	r := Route{Client: client, Upstream: upstream, NDJSON: hub.NDJSON}
	r.request = func(body []byte, info RequestInfo, model string, o RouteOptions) ([]byte, bool, error) {
		chat, err := s.toChat(body, info, model, chatOptions{
			OpenAICloud: upstream == FormatOpenAI && o.Cloud,
			Anthropic:   upstream == FormatAnthropic,
			Local:       upstream == FormatOllama || upstream == FormatOpenAI && !o.Cloud,
		})
		if err != nil || upstream == FormatOpenAI {
			// A chat request is already what a chat upstream takes:
			// the model is written in and usage asked for.
			return chat, false, err
		}
		return hub.request(chat, hubInfo(model, info.Stream), model, o)
	}
	r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
		chat, usage, err := hub.response(raw, hubInfo(info.Model, false))
		if err != nil {
			return nil, usage, err
		}
		out, _, err := s.fromChat(chat, info)
		return out, usage, err
	}
	r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator {
		return Chain(hub.stream(model, hubInfo(model, true), false), s.newStream(model, info))
	}
	switch upstream {
	case FormatOpenAI:
		// The answer is already chat: the spoke reads it once, usage
		// included.
		r.response = s.fromChat
		if _, ok := s.(chatStreamReader); ok {
			r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator { return s.newStream(model, info) }
		}
	case FormatAnthropic:
		r.response = s.fromAnthropic
		r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator {
			return Chain(newAnthropicToHubStream(), s.newStream(model, info))
		}
	}
	return r, nil
}
