package providers

import "encoding/json"

// The Anthropic Messages wire types used by translation.

// AnthropicRequest is a Messages request.
type AnthropicRequest struct {
	Model         string               `json:"model"`
	MaxTokens     int64                `json:"max_tokens"`
	Messages      []AnthropicMessage   `json:"messages"`
	System        json.RawMessage      `json:"system,omitempty"` // string or text blocks
	StopSequences []string             `json:"stop_sequences,omitempty"`
	Stream        bool                 `json:"stream,omitempty"`
	Temperature   *float64             `json:"temperature,omitempty"`
	TopP          *float64             `json:"top_p,omitempty"`
	TopK          *int64               `json:"top_k,omitempty"`
	Tools         []AnthropicTool      `json:"tools,omitempty"`
	ToolChoice    *AnthropicToolChoice `json:"tool_choice,omitempty"`
	Thinking      json.RawMessage      `json:"thinking,omitempty"`
	Metadata      *AnthropicMetadata   `json:"metadata,omitempty"`
	ServiceTier   string               `json:"service_tier,omitempty"`
}

// AnthropicMetadata is `metadata`.
type AnthropicMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

// AnthropicMessage is one turn. Content is a string or an array of blocks.
// Role may be "system" in requests from Claude Code, which the gateway
// accepts although the provider does not.
type AnthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// AnthropicBlock is a content block of any type; which fields are set
// depends on Type.
type AnthropicBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// image, document
	Source *AnthropicSource `json:"source,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result: Content is a string or blocks.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// tool_reference, inside a tool_result: a tool a client-side tool
	// search (Claude Code's ToolSearch) loaded for the next turn.
	ToolName string `json:"tool_name,omitempty"`
	// thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	// redacted_thinking
	Data string `json:"data,omitempty"`
	// CacheControl is accepted and dropped when translating.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// AnthropicSource is an image or document source.
type AnthropicSource struct {
	Type      string `json:"type"` // base64 | url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// AnthropicTool is a client tool definition.
type AnthropicTool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// AnthropicToolChoice is `tool_choice`.
type AnthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// AnthropicResponse is a non-streaming Messages response.
type AnthropicResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []AnthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        AnthropicUsage   `json:"usage"`
}

// AnthropicUsage is `usage` in responses, message_start and message_delta.
// Pointers tell "absent" from zero, since message_delta repeats only some.
type AnthropicUsage struct {
	InputTokens              *int64                  `json:"input_tokens,omitempty"`
	OutputTokens             int64                   `json:"output_tokens"`
	CacheCreationInputTokens *int64                  `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64                  `json:"cache_read_input_tokens,omitempty"`
	CacheCreation            *AnthropicCacheCreation `json:"cache_creation,omitempty"`
	ServiceTier              string                  `json:"service_tier,omitempty"`
	ServerToolUse            *AnthropicServerToolUse `json:"server_tool_use,omitempty"`
}

// AnthropicServerToolUse counts the server tools the provider ran.
type AnthropicServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests"`
}

// AnthropicCacheCreation splits cache writes by TTL.
type AnthropicCacheCreation struct {
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
}
