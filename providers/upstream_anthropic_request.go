package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// fallbackMaxTokens is used when neither the client nor the configuration
// gives a limit; Anthropic refuses a request without one.
const fallbackMaxTokens = 4096

// anthropicOutRequest is the request sent to an Anthropic upstream. It
// differs from AnthropicRequest only in carrying typed content blocks, so
// the body is encoded in one pass.
type anthropicOutRequest struct {
	Model         string               `json:"model"`
	MaxTokens     int64                `json:"max_tokens"`
	System        string               `json:"system,omitempty"`
	Messages      []anthropicOutMsg    `json:"messages"`
	StopSequences []string             `json:"stop_sequences,omitempty"`
	Stream        bool                 `json:"stream,omitempty"`
	Temperature   *float64             `json:"temperature,omitempty"`
	TopP          *float64             `json:"top_p,omitempty"`
	Tools         []AnthropicTool      `json:"tools,omitempty"`
	ToolChoice    *AnthropicToolChoice `json:"tool_choice,omitempty"`
	Metadata      *AnthropicMetadata   `json:"metadata,omitempty"`
	Thinking      *anthropicThinking   `json:"thinking,omitempty"`
}

// anthropicThinking turns extended thinking on with a token budget.
type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

// thinkingBudget maps reasoning_effort onto an extended-thinking budget,
// which must be at least 1024 and below max_tokens; 0 means no thinking
// (effort none or minimal, or no room under max_tokens).
func thinkingBudget(effort string, maxTokens int64) int64 {
	var b int64
	switch effort {
	case "low":
		b = 2048
	case "medium":
		b = 8192
	case "high":
		b = 24576
	case "xhigh", "max":
		b = 32768
	default:
		return 0
	}
	b = min(b, maxTokens-1)
	if b < 1024 {
		return 0
	}
	return b
}

type anthropicOutMsg struct {
	Role    string           `json:"role"`
	Content []AnthropicBlock `json:"content"`
}

const emptyObjectSchema = `{"type":"object","properties":{}}`

// OpenAIToAnthropicRequest translates an OpenAI chat completions request
// into an Anthropic Messages request for upstreamModel (docs/wire-formats.md §5.1).
// defaultMaxTokens applies when the client sets no limit. Errors the client
// caused are *APIError 400 naming the parameter.
func OpenAIToAnthropicRequest(body []byte, upstreamModel string, defaultMaxTokens int64) ([]byte, error) {
	out, err := buildAnthropicRequest(body, upstreamModel, defaultMaxTokens)
	if err != nil {
		return nil, err
	}
	// The output is about the size of the input; one allocation holds it.
	return appendAnthropicRequest(make([]byte, 0, len(body)+256), &out), nil
}

// buildAnthropicRequest decodes the body and maps it to the output struct, which OpenAIToAnthropicRequest
// encodes by hand, byte for byte as json.Marshal would (FuzzOpenAIRequestDifferential
// and FuzzResponseDifferential check that).
func buildAnthropicRequest(body []byte, upstreamModel string, defaultMaxTokens int64) (anthropicOutRequest, error) {
	var in OpenAIRequest
	if err := unmarshalOpenAIRequest(body, &in); err != nil {
		return anthropicOutRequest{}, BadRequest("messages", "invalid request body: "+jsonErrText(err))
	}
	if in.N != nil && *in.N != 1 {
		return anthropicOutRequest{}, BadRequest("n", "n must be 1 for this model")
	}
	out := anthropicOutRequest{Model: upstreamModel, Stream: in.Stream, TopP: in.TopP}

	switch {
	case in.MaxCompletionTokens != nil:
		out.MaxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		out.MaxTokens = *in.MaxTokens
	case defaultMaxTokens > 0:
		out.MaxTokens = defaultMaxTokens
	default:
		out.MaxTokens = fallbackMaxTokens
	}
	if out.MaxTokens < 1 {
		param := "max_tokens"
		if in.MaxCompletionTokens != nil {
			param = "max_completion_tokens"
		}
		return anthropicOutRequest{}, BadRequest(param, param+" must be at least 1")
	}
	if t := in.Temperature; t != nil {
		v := min(*t, 1)
		out.Temperature = &v
	}
	if b := thinkingBudget(in.ReasoningEffort, out.MaxTokens); b > 0 {
		// Anthropic refuses a temperature or top_p beside thinking.
		out.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: b}
		out.Temperature, out.TopP = nil, nil
	}
	stops, err := decodeStop(in.Stop, notBlank)
	if err != nil {
		return anthropicOutRequest{}, err
	}
	out.StopSequences = stops
	if in.User != "" {
		out.Metadata = &AnthropicMetadata{UserID: in.User}
	}

	var system strings.Builder
	for i := range in.Messages {
		m := &in.Messages[i]
		switch m.Role {
		case "system", "developer":
			text, err := openAIText(m.Content, i)
			if err != nil {
				return anthropicOutRequest{}, err
			}
			if system.Len() > 0 {
				system.WriteByte('\n')
			}
			system.WriteString(text)
		case "user":
			blocks, err := openAIUserBlocks(m.Content, i)
			if err != nil {
				return anthropicOutRequest{}, err
			}
			out.Messages = appendTurn(out.Messages, "user", blocks)
		case "assistant":
			blocks, err := openAIAssistantBlocks(m, i)
			if err != nil {
				return anthropicOutRequest{}, err
			}
			out.Messages = appendTurn(out.Messages, "assistant", blocks)
		case "tool":
			if m.ToolCallID == "" {
				return anthropicOutRequest{}, BadRequest(fmt.Sprintf("messages[%d].tool_call_id", i), "tool message has no tool_call_id")
			}
			content, err := toolResultContent(m.Content, i)
			if err != nil {
				return anthropicOutRequest{}, err
			}
			// A tool_result must lead its user turn; appendTurn merges
			// consecutive results into one turn in order.
			out.Messages = appendTurn(out.Messages, "user", []AnthropicBlock{{
				Type: "tool_result", ToolUseID: sanitizeID(m.ToolCallID), Content: content}})
		default:
			return anthropicOutRequest{}, BadRequest(fmt.Sprintf("messages[%d].role", i), "unsupported message role "+strconv.Quote(m.Role))
		}
	}
	if len(out.Messages) == 0 {
		return anthropicOutRequest{}, BadRequest("messages", "messages must contain at least one user or assistant message")
	}
	out.System = system.String()

	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "function" {
			return anthropicOutRequest{}, BadRequest(fmt.Sprintf("tools[%d].type", i), "unsupported tool type "+strconv.Quote(t.Type))
		}
		if t.Function.Name == "" {
			return anthropicOutRequest{}, BadRequest(fmt.Sprintf("tools[%d].function.name", i), "tool has no name")
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(emptyObjectSchema)
		}
		out.Tools = append(out.Tools, AnthropicTool{
			Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if len(out.Tools) > 0 {
		tc, err := anthropicToolChoice(in.ToolChoice)
		if err != nil {
			return anthropicOutRequest{}, err
		}
		if in.ParallelToolCalls != nil && !*in.ParallelToolCalls {
			if tc == nil {
				tc = &AnthropicToolChoice{Type: "auto"}
			}
			if tc.Type != "none" {
				tc.DisableParallelToolUse = true
			}
		}
		out.ToolChoice = tc
	}
	return out, nil
}

// jsonErrText keeps decoder errors short and free of the body's content.
func jsonErrText(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return "malformed json at offset " + strconv.FormatInt(e.Offset, 10)
	case *json.UnmarshalTypeError:
		if e.Field != "" {
			return e.Field + ": expected " + e.Type.String()
		}
		return "expected " + e.Type.String()
	}
	return "malformed json"
}

// appendTurn adds blocks as a turn of role, merging with the previous turn
// when it has the same role (Anthropic wants alternating turns).
func appendTurn(msgs []anthropicOutMsg, role string, blocks []AnthropicBlock) []anthropicOutMsg {
	if len(blocks) == 0 {
		return msgs
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, anthropicOutMsg{Role: role, Content: blocks})
}

// decodeStop reads OpenAI's `stop` (a string or a list) and keeps the
// entries keep accepts: Anthropic rejects whitespace-only sequences, Ollama
// has no use for empty ones.
func decodeStop(raw json.RawMessage, keep func(string) bool) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var list []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, BadRequest("stop", "stop must be a string or an array of strings")
		}
		list = []string{s}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, BadRequest("stop", "stop must be a string or an array of strings")
	}
	kept := list[:0]
	for _, s := range list {
		if keep(s) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return kept, nil
}

func notBlank(s string) bool { return strings.TrimSpace(s) != "" }

func notEmpty(s string) bool { return s != "" }

// openAIParts decodes message content that is a string, an array of parts
// or null. A string comes back as one text part.
func openAIParts(raw json.RawMessage, i int) ([]OpenAIContentPart, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		// raw is a value of a decoded document, so a valid string.
		return []OpenAIContentPart{{Type: "text", Text: jsonfast.Unquote(raw)}}, nil
	}
	if parts, ok := readContentParts(raw); ok {
		return parts, nil
	}
	var parts []OpenAIContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, BadRequest(fmt.Sprintf("messages[%d].content", i), "content must be a string or an array of content parts")
	}
	return parts, nil
}

// openAIText flattens system/developer content to text.
func openAIText(raw json.RawMessage, i int) (string, error) {
	parts, err := openAIParts(raw, i)
	if err != nil {
		return "", err
	}
	if len(parts) == 1 && parts[0].Type == "text" {
		return parts[0].Text, nil
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j), "only text parts are allowed here")
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func openAIUserBlocks(raw json.RawMessage, i int) ([]AnthropicBlock, error) {
	parts, err := openAIParts(raw, i)
	if err != nil {
		return nil, err
	}
	blocks := make([]AnthropicBlock, 0, len(parts))
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case "text":
			// Anthropic rejects empty text blocks; they carry nothing.
			if p.Text != "" {
				blocks = append(blocks, AnthropicBlock{Type: "text", Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].image_url", i, j), "image part has no image_url")
			}
			src, ok := imageSource(p.ImageURL.URL)
			if !ok {
				return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].image_url.url", i, j),
					"image url must be an http(s) url or a base64 data uri")
			}
			blocks = append(blocks, AnthropicBlock{Type: "image", Source: src})
		default:
			return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j),
				"unsupported content part type "+strconv.Quote(p.Type))
		}
	}
	return blocks, nil
}

// imageSource turns an OpenAI image URL into an Anthropic image source.
func imageSource(url string) (*AnthropicSource, bool) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || media == "" || data == "" {
			return nil, false
		}
		return &AnthropicSource{Type: "base64", MediaType: media, Data: data}, true
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return &AnthropicSource{Type: "url", URL: url}, true
	}
	return nil, false
}

func openAIAssistantBlocks(m *OpenAIMessage, i int) ([]AnthropicBlock, error) {
	parts, err := openAIParts(m.Content, i)
	if err != nil {
		return nil, err
	}
	blocks := make([]AnthropicBlock, 0, len(parts)+len(m.ToolCalls)+1)
	if len(m.ThinkingBlocks) > 0 && !bytes.Equal(m.ThinkingBlocks, []byte("null")) {
		var thinking []AnthropicBlock
		if err := json.Unmarshal(m.ThinkingBlocks, &thinking); err != nil {
			return nil, BadRequest(fmt.Sprintf("messages[%d].thinking_blocks", i), "thinking_blocks must be a list of thinking blocks")
		}
		// Thinking leads the turn, as Anthropic sent it.
		for _, b := range thinking {
			switch {
			case b.Type == "thinking" && b.Signature != "":
				blocks = append(blocks, AnthropicBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
			case b.Type == "redacted_thinking" && b.Data != "":
				blocks = append(blocks, AnthropicBlock{Type: "redacted_thinking", Data: b.Data})
			}
		}
	}
	for j, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, AnthropicBlock{Type: "text", Text: p.Text})
			}
		case "refusal":
			// A refusal is the assistant's text for history purposes.
		default:
			return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j),
				"unsupported assistant content part type "+strconv.Quote(p.Type))
		}
	}
	for j := range m.ToolCalls {
		tc := &m.ToolCalls[j]
		if tc.ID == "" {
			return nil, BadRequest(fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j), "tool call has no id")
		}
		input := json.RawMessage(tc.Function.Arguments)
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			input = json.RawMessage("{}")
		} else if !json.Valid(input) || input[jsonfast.SkipSpace(input, 0)] != '{' {
			return nil, BadRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j),
				"tool call arguments must be a json object")
		}
		blocks = append(blocks, AnthropicBlock{
			Type: "tool_use", ID: sanitizeID(tc.ID), Name: tc.Function.Name, Input: input})
	}
	return blocks, nil
}

// toolResultContent turns a tool message's content into tool_result
// content: a string stays a string, parts become text/image blocks.
func toolResultContent(raw json.RawMessage, i int) (json.RawMessage, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`""`), nil
	}
	if raw[0] == '"' {
		return raw, nil
	}
	blocks, err := openAIUserBlocks(raw, i)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return json.RawMessage(`""`), nil
	}
	return appendAnthropicBlocks(nil, blocks), nil
}

func anthropicToolChoice(raw json.RawMessage) (*AnthropicToolChoice, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto":
			return &AnthropicToolChoice{Type: "auto"}, nil
		case "required":
			return &AnthropicToolChoice{Type: "any"}, nil
		case "none":
			return &AnthropicToolChoice{Type: "none"}, nil
		}
		return nil, BadRequest("tool_choice", "tool_choice must be auto, required, none or a function")
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Function.Name == "" {
		return nil, BadRequest("tool_choice", "tool_choice object must name a function")
	}
	return &AnthropicToolChoice{Type: "tool", Name: obj.Function.Name}, nil
}
