package providers

import "encoding/json"

// The OpenAI Chat Completions wire types. Only the fields a translation
// reads or writes are typed; pass-through never decodes the body at all.

// OpenAIRequest is a chat completions request.
type OpenAIRequest struct {
	Model               string            `json:"model"`
	Messages            []OpenAIMessage   `json:"messages"`
	MaxTokens           *int64            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *OpenAIStreamOpts `json:"stream_options,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	TopP                *float64          `json:"top_p,omitempty"`
	N                   *int64            `json:"n,omitempty"`
	Stop                json.RawMessage   `json:"stop,omitempty"` // string or []string
	Tools               []OpenAITool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage   `json:"tool_choice,omitempty"` // string or object
	ParallelToolCalls   *bool             `json:"parallel_tool_calls,omitempty"`
	User                string            `json:"user,omitempty"`
	Seed                *int64            `json:"seed,omitempty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty,omitempty"`
	PresencePenalty     *float64          `json:"presence_penalty,omitempty"`
	ResponseFormat      json.RawMessage   `json:"response_format,omitempty"`
	ReasoningEffort     string            `json:"reasoning_effort,omitempty"`
}

// OpenAIStreamOpts is `stream_options`.
type OpenAIStreamOpts struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// OpenAIMessage is one chat message. Content is a string, an array of
// parts, or null.
type OpenAIMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content,omitempty"`
	Name       string           `json:"name,omitempty"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	// Reasoning is the non-standard reasoning text some local servers emit.
	Reasoning string `json:"reasoning,omitempty"`
	// ThinkingBlocks are an assistant turn's Anthropic thinking blocks,
	// signatures included (LiteLLM's extension, which the translation hub
	// uses to carry Responses reasoning items to Anthropic).
	ThinkingBlocks json.RawMessage `json:"thinking_blocks,omitempty"`
}

// OpenAIContentPart is one element of an array `content`.
type OpenAIContentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	ImageURL *OpenAIImageURL `json:"image_url,omitempty"`
}

// OpenAIImageURL is an image part's URL: http(s) or a data URI.
type OpenAIImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// OpenAIToolCall is a function call made by the assistant. In stream
// deltas Index is set and the other fields arrive piecemeal.
type OpenAIToolCall struct {
	Index    *int               `json:"index,omitempty"`
	ID       string             `json:"id,omitempty"`
	Type     string             `json:"type,omitempty"`
	Function OpenAIFunctionCall `json:"function"`
	// ExtraContent is the call's vendor extension, kept raw: Google's
	// OpenAI layer and the gateway's Gemini translation hand a call's
	// thought signature to clients in it ({"google":{"thought_signature":…}})
	// for them to send back with the call.
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

// OpenAIFunctionCall carries a call's name and JSON-encoded arguments.
type OpenAIFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// OpenAITool is a tool definition.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is a function tool's definition.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// OpenAIResponse is a non-streaming chat completion as the gateway writes
// it for an OpenAI client, whatever the upstream (Anthropic, Ollama, the
// echo backend): one shape, one hand-written encoder.
type OpenAIResponse struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	SystemFingerprint *string        `json:"system_fingerprint,omitempty"`
	Choices           []OpenAIChoice `json:"choices"`
	// Usage is encoded once, by appendOpenAIUsage.
	Usage json.RawMessage `json:"usage"`
}

// OpenAIChoice is one completion choice.
type OpenAIChoice struct {
	Index        int                   `json:"index"`
	Message      OpenAIResponseMessage `json:"message"`
	Logprobs     json.RawMessage       `json:"logprobs"`
	FinishReason string                `json:"finish_reason"`
}

// OpenAIResponseMessage is the assistant message of a choice: content is
// null beside tool calls, refusal null unless the model refused.
type OpenAIResponseMessage struct {
	Role      string           `json:"role"`
	Content   *string          `json:"content"`
	Refusal   *string          `json:"refusal"`
	ToolCalls []OpenAIToolCall `json:"tool_calls,omitempty"`
	// Reasoning is the thinking text local servers (Ollama) return.
	Reasoning string `json:"reasoning,omitempty"`
}

// OpenAIUsage is the `usage` object of a response or final chunk.
type OpenAIUsage struct {
	PromptTokens            int64                     `json:"prompt_tokens"`
	CompletionTokens        int64                     `json:"completion_tokens"`
	TotalTokens             int64                     `json:"total_tokens"`
	PromptTokensDetails     *OpenAIPromptTokenDetails `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails json.RawMessage           `json:"completion_tokens_details,omitempty"`
}

// OpenAIPromptTokenDetails splits the prompt count.
type OpenAIPromptTokenDetails struct {
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}
