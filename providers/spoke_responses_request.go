package providers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The translation hub: a Responses request becomes a chat completions
// request, which every upstream format already has a route from
// (docs/wire-formats.md §7). Only what the next hop understands is
// written; the rest is mapped as that section describes.

// chatRequest is the chat completions request written for the next hop.
type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []chatMessage     `json:"messages"`
	MaxTokens           *int64            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *OpenAIStreamOpts `json:"stream_options,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	TopP                *float64          `json:"top_p,omitempty"`
	// N through PresencePenalty: what Gemini clients can set and
	// Responses clients cannot.
	N                 *int64          `json:"n,omitempty"`
	Stop              []string        `json:"stop,omitempty"`
	Seed              *int64          `json:"seed,omitempty"`
	FrequencyPenalty  *float64        `json:"frequency_penalty,omitempty"`
	PresencePenalty   *float64        `json:"presence_penalty,omitempty"`
	Tools             []OpenAITool    `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	User              string          `json:"user,omitempty"`
	ResponseFormat    json.RawMessage `json:"response_format,omitempty"`
	ReasoningEffort   string          `json:"reasoning_effort,omitempty"`
}

type chatMessage struct {
	Role       string           `json:"role"`
	Content    any              `json:"content"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	// ThinkingBlocks carry reasoning items back to Anthropic, signatures
	// and all; only written when the next hop is Anthropic.
	ThinkingBlocks []AnthropicBlock `json:"thinking_blocks,omitempty"`
}

type chatPart struct {
	Type       string           `json:"type"`
	Text       string           `json:"text,omitempty"`
	ImageURL   *OpenAIImageURL  `json:"image_url,omitempty"`
	File       *chatFile        `json:"file,omitempty"`
	InputAudio *geminiChatAudio `json:"input_audio,omitempty"`
}

type chatFile struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
}

// chatOptions says what the next hop accepts.
type chatOptions struct {
	// OpenAICloud: the next hop is a cloud chat completions API
	// (max_completion_tokens, every reasoning effort).
	OpenAICloud bool
	// Anthropic: the next hop is Anthropic, which takes thinking history.
	Anthropic bool
	// Local: the next hop is a local chat server (Ollama, or an
	// OpenAI-compatible one that is not OpenAI's API), which takes
	// max_tokens and one leading system message.
	Local bool
}

// hostedItem reports input items only OpenAI's servers can replay; a
// translated upstream never saw them, so they are left out (a
// server-executed tool search's items too: chatMessages).
func hostedItem(typ string) bool {
	switch typ {
	case "web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call",
		"computer_call", "computer_call_output", "mcp_call", "mcp_list_tools", "mcp_approval_request",
		"mcp_approval_response", "compaction", "compaction_trigger",
		"local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call",
		"apply_patch_call_output":
		return true
	}
	return false
}

// toChat writes the turn as a chat completions request.
func (t *ResponsesTurn) toChat(model string, stream bool, o chatOptions) ([]byte, error) {
	out, err := t.buildChat(model, stream, o)
	if err != nil {
		return nil, err
	}
	// The hub request is about the size of the client's.
	return appendChatRequest(make([]byte, 0, t.size+512), out), nil
}

// buildChat maps the turn onto the chat request's fields.
func (t *ResponsesTurn) buildChat(model string, stream bool, o chatOptions) (*chatRequest, error) {
	r := &t.Req
	out := chatRequest{Model: model, Temperature: r.Temperature, TopP: r.TopP}
	if stream {
		out.Stream = true
		// response.completed carries usage: ask for it whatever the client said.
		out.StreamOptions = &OpenAIStreamOpts{IncludeUsage: true}
	}
	if r.MaxOutputTokens != nil {
		if o.OpenAICloud {
			out.MaxCompletionTokens = r.MaxOutputTokens
		} else {
			out.MaxTokens = r.MaxOutputTokens
		}
	}
	switch {
	case r.SafetyIdentifier != nil:
		out.User = *r.SafetyIdentifier
	case r.User != nil:
		out.User = *r.User
	}
	if r.Reasoning != nil && r.Reasoning.Effort != nil {
		out.ReasoningEffort = reasoningEffort(*r.Reasoning.Effort, o.OpenAICloud)
	}
	var err error
	if r.Text != nil {
		if out.ResponseFormat, err = chatResponseFormat(r.Text.Format); err != nil {
			return nil, err
		}
	}
	if out.Tools, out.ToolChoice, err = t.chatTools(); err != nil {
		return nil, err
	}
	if len(out.Tools) > 0 {
		out.ParallelToolCalls = r.ParallelToolCalls
	}
	if out.Messages, err = t.chatMessages(o.Anthropic); err != nil {
		return nil, err
	}
	return &out, nil
}

// reasoningEffort keeps OpenAI's levels for OpenAI and maps the newest
// ones onto what local servers know.
func reasoningEffort(effort string, cloud bool) string {
	if cloud {
		return effort
	}
	switch effort {
	case "xhigh", "max":
		return "high"
	}
	return effort
}

// chatResponseFormat nests text.format's flat json_schema as chat does.
func chatResponseFormat(format json.RawMessage) (json.RawMessage, error) {
	if len(format) == 0 || string(format) == "null" {
		return nil, nil
	}
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
		Description string          `json:"description"`
	}
	if err := json.Unmarshal(format, &f); err != nil {
		return nil, fieldError("text.format", err)
	}
	switch f.Type {
	case "text", "":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		if len(f.Schema) == 0 || f.Schema[0] != '{' {
			return nil, responsesError("text.format.schema", "text.format.schema must be a JSON schema object")
		}
		if f.Name == "" {
			f.Name = "response"
		}
		return json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": f.Name, "schema": f.Schema, "strict": f.Strict, "description": optional(f.Description)}})
	}
	return nil, responsesError("text.format.type", "unknown text.format.type %q", f.Type)
}

// chatMessages writes the effective input as chat messages: system and
// developer text merged into one leading system message (many local
// templates allow only one), consecutive calls folded into one assistant
// message, tool outputs as tool messages, every call paired with an output.
func (t *ResponsesTurn) chatMessages(thinking bool) ([]chatMessage, error) {
	var system []string
	if t.Req.Instructions != nil && *t.Req.Instructions != "" {
		system = append(system, *t.Req.Instructions)
	}
	msgs := make([]chatMessage, 1, len(t.Items)+1) // [0] is the system message, dropped if empty
	// assistant is the open assistant message that following calls join.
	assistant := -1
	// pendingImages are tool-output images, which chat tool messages cannot
	// hold: they follow the tool messages as a user message.
	var pendingImages []chatPart
	flushImages := func() {
		if len(pendingImages) > 0 {
			msgs = append(msgs, chatMessage{Role: "user", Content: append([]chatPart{{Type: "text", Text: "Images returned by the tool calls above:"}}, pendingImages...)})
			pendingImages = nil
		}
	}
	openAssistant := func() *chatMessage {
		if assistant < 0 {
			flushImages()
			msgs = append(msgs, chatMessage{Role: "assistant"})
			assistant = len(msgs) - 1
		}
		return &msgs[assistant]
	}
	for i := range t.items {
		param := paramOf(i)
		it := &t.items[i]
		typ := it.Type
		switch {
		case it.isReference():
			typ = "item_reference"
		case typ == "" && it.Role != "":
			typ = "message"
		}
		switch typ {
		case "message":
			switch it.Role {
			case "system", "developer":
				text, _, err := itemText(&it.Content.itemContent, param)
				if err != nil {
					return nil, err
				}
				system = append(system, text)
			case "user":
				parts, err := userParts(&it.Content.itemContent, param)
				if err != nil {
					return nil, err
				}
				assistant = -1
				flushImages()
				msgs = append(msgs, chatMessage{Role: "user", Content: parts})
			case "assistant":
				text, _, err := itemText(&it.Content.itemContent, param)
				if err != nil {
					return nil, err
				}
				if assistant >= 0 && len(msgs[assistant].ToolCalls) > 0 {
					assistant = -1
				}
				m := openAssistant()
				if s, _ := m.Content.(string); s != "" {
					text = s + text
				}
				m.Content = text
			case "":
				return nil, responsesError(param+".role", "%s.role is required", param)
			default:
				return nil, responsesError(param+".role", "unknown role %q", it.Role)
			}
		case "function_call", "custom_tool_call":
			if it.CallID == "" {
				return nil, responsesError(param+".call_id", "%s.call_id is required", param)
			}
			var args string
			if typ == "function_call" {
				var err error
				if args, err = argumentsString(it.Arguments, param); err != nil {
					return nil, err
				}
			} else {
				b, _ := json.Marshal(map[string]string{"input": it.Input})
				args = string(b)
			}
			m := openAssistant()
			m.ToolCalls = append(m.ToolCalls, OpenAIToolCall{ID: it.CallID, Type: "function",
				Function: OpenAIFunctionCall{Name: chatName(it.Name, it.Namespace), Arguments: args}})
		case "tool_search_call", "tool_search_output":
			if it.Execution != toolSearchClient {
				continue // OpenAI's servers ran it; nothing a backend can replay
			}
			if typ == "tool_search_call" {
				call, err := toolSearchCall(it, param)
				if err != nil {
					return nil, err
				}
				m := openAssistant()
				m.ToolCalls = append(m.ToolCalls, call)
				continue
			}
			msg, err := toolSearchResult(it, param)
			if err != nil {
				return nil, err
			}
			assistant = -1
			msgs = append(msgs, msg)
		case "function_call_output", "custom_tool_call_output":
			if it.CallID == "" {
				return nil, responsesError(param+".call_id", "%s.call_id is required", param)
			}
			text, images, err := itemText(&it.Output.itemContent, param+".output")
			if err != nil {
				return nil, err
			}
			assistant = -1
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: text})
			pendingImages = append(pendingImages, images...)
		case "reasoning":
			// Only Anthropic takes reasoning history, and only its own:
			// blocks the gateway wrapped in encrypted_content, found by
			// content since Codex replays reasoning without ids.
			if !thinking || it.EncryptedContent == nil {
				continue
			}
			if blocks := openThinking(*it.EncryptedContent); len(blocks) > 0 {
				if assistant >= 0 && (len(msgs[assistant].ToolCalls) > 0 || msgs[assistant].Content != nil) {
					assistant = -1
				}
				m := openAssistant()
				m.ThinkingBlocks = append(m.ThinkingBlocks, blocks...)
			}
		case "item_reference":
			return nil, responsesError(param, "Item with id %q not found.", it.ID)
		default:
			if !hostedItem(typ) {
				return nil, responsesError(param+".type", "unknown input item type %q", typ)
			}
		}
	}
	flushImages()
	if len(system) > 0 {
		msgs[0] = chatMessage{Role: "system", Content: strings.Join(system, "\n\n")}
	} else {
		msgs = msgs[1:]
	}
	msgs = pairToolCalls(msgs)
	if len(msgs) == 0 || (len(msgs) == 1 && msgs[0].Role == "system") {
		return nil, responsesError("input", "input holds no message to answer")
	}
	return msgs, nil
}

// argumentsString reads a call's arguments, a JSON-encoded string; an
// object is accepted too (some clients send one) and encoded.
func argumentsString(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] == '{' {
		return string(raw), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", responsesError(param+".arguments", "%s.arguments must be a JSON-encoded string", param)
	}
	return s, nil
}

// pairToolCalls drops tool messages whose call is unknown and answers a
// call left without output with "aborted": chat upstreams reject both.
func pairToolCalls(msgs []chatMessage) []chatMessage {
	if !slices.ContainsFunc(msgs, func(m chatMessage) bool { return m.Role == "tool" || len(m.ToolCalls) > 0 }) {
		return msgs // nothing to pair: the common conversation costs no copy
	}
	return pairAll(msgs)
}

// pairAll is pairToolCalls' walk, into a new list.
func pairAll(msgs []chatMessage) []chatMessage {
	calls := map[string]bool{}
	outputs := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == "tool" {
			outputs[m.ToolCallID] = true
		}
	}
	out := make([]chatMessage, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "tool" && !calls[m.ToolCallID] {
			continue
		}
		out = append(out, m)
		if len(m.ToolCalls) == 0 {
			continue
		}
		// The tool messages for this call follow it directly.
		for i+1 < len(msgs) && msgs[i+1].Role == "tool" {
			i++
			if calls[msgs[i].ToolCallID] {
				out = append(out, msgs[i])
			}
		}
		for _, c := range m.ToolCalls {
			if !outputs[c.ID] {
				out = append(out, chatMessage{Role: "tool", ToolCallID: c.ID, Content: "aborted"})
			}
		}
	}
	return out
}

// itemText reads a message's content or a tool's output (a string or
// parts) as text, a refusal part as text too, and returns the images.
func itemText(c *itemContent, param string) (string, []chatPart, error) {
	if c.parts == nil {
		return c.text, nil, nil
	}
	if len(c.parts) == 1 && c.parts[0].Type != "input_image" {
		// The common case, one text part, costs no builder.
		p := &c.parts[0]
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			return p.Text, nil, nil
		case "refusal":
			return p.Refusal, nil, nil
		}
	}
	var b strings.Builder
	var images []chatPart
	for j := range c.parts {
		p := &c.parts[j]
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		case "input_image":
			img, err := imagePart(p, fmt.Sprintf("%s.content[%d]", param, j))
			if err != nil {
				return "", nil, err
			}
			images = append(images, img)
		default:
			return "", nil, responsesError(fmt.Sprintf("%s.content[%d].type", param, j), "content part type %q is not allowed here", p.Type)
		}
	}
	return b.String(), images, nil
}

// userParts reads a user message's content: plain text stays a string
// (every chat template takes it), anything else becomes chat parts.
func userParts(c *itemContent, param string) (any, error) {
	if c.parts == nil {
		return c.text, nil
	}
	textOnly := true
	for j := range c.parts {
		if t := c.parts[j].Type; t != "input_text" && t != "output_text" && t != "text" {
			textOnly = false
		}
	}
	if textOnly {
		text, _, err := itemText(c, param)
		return text, err
	}
	out := make([]chatPart, 0, len(c.parts))
	for j := range c.parts {
		p := &c.parts[j]
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, chatPart{Type: "text", Text: p.Text})
		case "input_image":
			img, err := imagePart(p, pp)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		case "input_file":
			if p.FileData == "" {
				return nil, responsesError(pp+".file_data", "input_file needs file_data (a data URL): file_id and file_url refer to OpenAI's storage, which this gateway does not have")
			}
			out = append(out, chatPart{Type: "file", File: &chatFile{Filename: p.Filename, FileData: p.FileData}})
		default:
			return nil, responsesError(pp+".type", "content part type %q is not allowed in a user message", p.Type)
		}
	}
	return out, nil
}

func imagePart(p *responsesPart, param string) (chatPart, error) {
	if p.ImageURL == "" {
		return chatPart{}, responsesError(param+".image_url", "input_image needs image_url (https or a data URL): file_id refers to OpenAI's storage, which this gateway does not have")
	}
	detail := p.Detail
	if detail == "original" {
		detail = "high"
	}
	return chatPart{Type: "image_url", ImageURL: &OpenAIImageURL{URL: p.ImageURL, Detail: detail}}, nil
}

// CountBody is the turn as an Anthropic count_tokens request (model,
// system, messages, tools): the shape the gateway's token counting and
// Anthropic's free endpoint both read.
func (t *ResponsesTurn) CountBody() ([]byte, error) {
	chat, err := t.toChat(t.Req.Model, false, chatOptions{Anthropic: true})
	if err != nil {
		return nil, err
	}
	return countBodyFromChat(chat, t.Req.Model)
}

// countBodyFromChat keeps of a hub request what count_tokens counts.
func countBodyFromChat(chat []byte, model string) ([]byte, error) {
	full, err := OpenAIToAnthropicRequest(chat, model, 1)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(full, &m); err != nil {
		return nil, err
	}
	keep := map[string]json.RawMessage{}
	for _, k := range [...]string{"model", "system", "messages", "tools", "tool_choice"} {
		if v, ok := m[k]; ok {
			keep[k] = v
		}
	}
	return json.Marshal(keep)
}
