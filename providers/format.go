package providers

import (
	"strconv"

	"github.com/modelgate/modelgate/apierror"
)

// Format is a wire format spoken by a client or an upstream.
type Format uint8

const (
	// FormatOpenAI is OpenAI Chat Completions (JSON, SSE without event names).
	FormatOpenAI Format = iota
	// FormatAnthropic is Anthropic Messages (JSON, SSE with event names).
	FormatAnthropic
	// FormatOllama is Ollama's native /api/chat (JSON, NDJSON streams).
	FormatOllama
	// FormatResponses is the OpenAI Responses API (JSON, SSE with event
	// names and sequence numbers).
	FormatResponses
	// FormatGemini is Google's Gemini API (generateContent; JSON, SSE of
	// whole GenerateContentResponse chunks).
	FormatGemini
	// FormatEmbeddings is OpenAI's embeddings API (a client format only;
	// errors in OpenAI's family).
	FormatEmbeddings
	// FormatGeminiEmbed is Gemini's embedContent and batchEmbedContents
	// (a client format only; errors in Google's family).
	FormatGeminiEmbed
	// FormatConverse is Amazon Bedrock's Converse and ConverseStream
	// (JSON; streams as AWS event-stream messages, one per event; errors
	// as {"message"} with the exception in x-amzn-ErrorType). A client
	// format only: its model is in the URL, /model/{modelId}/converse.
	FormatConverse
)

// FormatCount is how many formats there are: a table indexed by Format
// (a backend's routes, a gateway's parsers) has this many entries.
const FormatCount = int(FormatConverse) + 1

// ClientFormats are the formats clients speak, each with a route to every
// upstream format: what a backend builds its routes for. Ollama is an
// upstream format only.
func ClientFormats() []Format {
	return []Format{FormatOpenAI, FormatAnthropic, FormatResponses, FormatGemini, FormatEmbeddings, FormatGeminiEmbed, FormatConverse}
}

// ErrorFamily is the error shape a client of f reads: what makes a
// Format an apierror.Audience.
func (f Format) ErrorFamily() apierror.Family {
	switch f {
	case FormatAnthropic:
		return apierror.Anthropic
	case FormatGemini, FormatGeminiEmbed:
		return apierror.Gemini
	case FormatConverse:
		return apierror.Bedrock
	}
	return apierror.OpenAI
}

func (f Format) String() string {
	switch f {
	case FormatOpenAI:
		return "openai"
	case FormatAnthropic:
		return "anthropic"
	case FormatOllama:
		return "ollama"
	case FormatResponses:
		return "responses"
	case FormatGemini:
		return "gemini"
	case FormatEmbeddings:
		return "embeddings"
	case FormatGeminiEmbed:
		return "gemini embeddings"
	case FormatConverse:
		return "converse"
	}
	return "unknown"
}

// The per-format answers below are what a handler would otherwise switch
// on at request time. Each is a property of the client's format, decided
// here once, so handlers ask the format instead.

// RateLimitHeaders names a family of rate-limit response headers.
type RateLimitHeaders struct {
	RequestsLimit, RequestsRemaining, RequestsReset string
	TokensLimit, TokensRemaining, TokensReset       string
	// ResetAt: the reset headers hold the window's end as an RFC 3339
	// time (Anthropic's); otherwise the wait until it, as "12s" (OpenAI's).
	ResetAt bool
}

// RateLimitHeaders is the family of rate-limit headers a client of f
// reads: Anthropic's anthropic-ratelimit-* for Messages clients, OpenAI's
// x-ratelimit-* for every other (Gemini has none of its own).
func (f Format) RateLimitHeaders() RateLimitHeaders {
	if f == FormatAnthropic {
		return RateLimitHeaders{
			RequestsLimit: "Anthropic-Ratelimit-Requests-Limit", RequestsRemaining: "Anthropic-Ratelimit-Requests-Remaining",
			RequestsReset: "Anthropic-Ratelimit-Requests-Reset", TokensLimit: "Anthropic-Ratelimit-Tokens-Limit",
			TokensRemaining: "Anthropic-Ratelimit-Tokens-Remaining", TokensReset: "Anthropic-Ratelimit-Tokens-Reset",
			ResetAt: true,
		}
	}
	return RateLimitHeaders{
		RequestsLimit: "X-Ratelimit-Limit-Requests", RequestsRemaining: "X-Ratelimit-Remaining-Requests",
		RequestsReset: "X-Ratelimit-Reset-Requests", TokensLimit: "X-Ratelimit-Limit-Tokens",
		TokensRemaining: "X-Ratelimit-Remaining-Tokens", TokensReset: "X-Ratelimit-Reset-Tokens",
	}
}

// TokenCount renders a free token count (count_tokens, Responses'
// input_tokens, Gemini's countTokens) in the shape a client of f reads.
func (f Format) TokenCount(n int) []byte {
	switch f {
	case FormatResponses:
		return []byte(`{"object":"response.input_tokens","input_tokens":` + strconv.Itoa(n) + `}`)
	case FormatGemini:
		s := strconv.Itoa(n)
		return []byte(`{"totalTokens":` + s + `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":` + s + `}]}`)
	}
	return []byte(`{"input_tokens":` + strconv.Itoa(n) + `}`)
}

// CountsAsMessages reports whether a client of f reads Anthropic's
// count_tokens answer itself, so an upstream's is relayed as it came
// instead of being read and rendered by TokenCount.
func (f Format) CountsAsMessages() bool {
	return f == FormatAnthropic
}

// SessionInMetadata reports whether a request body of f may name its
// coding-agent session in metadata.user_id (Claude Code's Messages
// requests do).
func (f Format) SessionInMetadata() bool {
	return f == FormatAnthropic
}

// BoundMember is the member a request body of f that sets no output bound
// is given one as (RequestInfo.WithOutputLimit's insert): Messages'
// max_tokens, chat's max_completion_tokens. The formats parsed whole know
// their own.
func (f Format) BoundMember() string {
	if f == FormatAnthropic {
		return "max_tokens"
	}
	return "max_completion_tokens"
}

// A RequestParser reads a client's request body far enough to route it.
// model and action are the URL's, for the formats whose body names no
// model: Gemini's (models/{model}:{action}) and Converse's
// (/model/{modelId}/{action}, the model id already mapped to an alias);
// the other formats name their model in the body and ignore them.
type RequestParser func(body []byte, model, action string) (RequestInfo, error)

// Parser is how a request body of f is read: chat and Messages bodies are
// only peeked (PeekRequest); Responses, Gemini, embeddings and Converse
// requests are parsed whole into their Turn.
func (f Format) Parser() RequestParser {
	switch f {
	case FormatResponses:
		return parseResponses
	case FormatGemini:
		return parseGemini
	case FormatEmbeddings:
		return parseEmbeddings
	case FormatGeminiEmbed:
		return parseGeminiEmbed
	case FormatConverse:
		return parseConverse
	}
	return peek
}

func peek(body []byte, _, _ string) (RequestInfo, error) { return PeekRequest(body) }

func parseResponses(body []byte, _, _ string) (RequestInfo, error) {
	t, err := ParseResponsesRequest(body)
	if err != nil {
		return RequestInfo{}, err
	}
	return t.Info(), nil
}

func parseGemini(body []byte, model, action string) (RequestInfo, error) {
	return ParseGeminiRequest(body, model, action == "streamGenerateContent")
}

func parseEmbeddings(body []byte, _, _ string) (RequestInfo, error) {
	return ParseEmbeddingsRequest(body)
}

func parseGeminiEmbed(body []byte, model, action string) (RequestInfo, error) {
	return ParseGeminiEmbedRequest(body, model, action == "batchEmbedContents")
}

func parseConverse(body []byte, model, action string) (RequestInfo, error) {
	return ParseConverseRequest(body, model, action == "converse-stream")
}
