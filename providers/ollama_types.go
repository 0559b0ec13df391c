package providers

import "encoding/json"

// The Ollama native /api/chat wire types. Only the fields a translation
// reads or writes are typed.

// OllamaRequest is an /api/chat request.
type OllamaRequest struct {
	Model    string          `json:"model"`
	Messages []OllamaMessage `json:"messages"`
	Tools    []OllamaTool    `json:"tools,omitempty"`
	// Stream has no omitempty: Ollama streams unless told false.
	Stream  bool            `json:"stream"`
	Format  json.RawMessage `json:"format,omitempty"` // "json" or a JSON schema
	Options *OllamaOptions  `json:"options,omitempty"`
	Think   json.RawMessage `json:"think,omitempty"` // bool or "low"|"medium"|"high"|"max"
	// KeepAlive is a duration string such as "5m".
	KeepAlive string `json:"keep_alive,omitempty"`
}

// OllamaMessage is one chat message in a request or response.
type OllamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Images are base64 without a data: prefix.
	Images     []string         `json:"images,omitempty"`
	ToolCalls  []OllamaToolCall `json:"tool_calls,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	Thinking   string           `json:"thinking,omitempty"`
}

// OllamaToolCall is a whole function call; Ollama never streams one in
// pieces. ID is only sent by newer servers.
type OllamaToolCall struct {
	ID       string             `json:"id,omitempty"`
	Function OllamaFunctionCall `json:"function"`
}

// OllamaFunctionCall carries the arguments as a JSON object, not a string.
type OllamaFunctionCall struct {
	Index     *int            `json:"index,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// OllamaTool is a tool definition; the shape is OpenAI's.
type OllamaTool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OllamaOptions are the model options of a request.
type OllamaOptions struct {
	NumPredict       *int64   `json:"num_predict,omitempty"`
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	TopK             *int64   `json:"top_k,omitempty"`
	Stop             []string `json:"stop,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
}

// OllamaResponse is a non-streaming response or one NDJSON stream line.
// The counters are omitempty upstream, so an absent one means zero.
type OllamaResponse struct {
	Model           string        `json:"model"`
	CreatedAt       string        `json:"created_at"`
	Message         OllamaMessage `json:"message"`
	Done            bool          `json:"done"`
	DoneReason      string        `json:"done_reason,omitempty"`
	TotalDuration   int64         `json:"total_duration,omitempty"`
	PromptEvalCount int64         `json:"prompt_eval_count,omitempty"`
	EvalCount       int64         `json:"eval_count,omitempty"`
	Error           string        `json:"error,omitempty"`
}
