package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// toolErrorPrefix marks a tool_result with is_error: OpenAI tool messages
// have no error flag, so the model learns it from the text.
const toolErrorPrefix = "Error: "

// AnthropicToOpenAIRequest translates an Anthropic Messages request into
// an OpenAI chat completions request for upstreamModel (docs/wire-formats.md §5.2).
// cloud selects max_completion_tokens (OpenAI itself) over max_tokens
// (local servers, which ignore the newer name). Thinking, cache_control,
// top_k, service_tier and block types with no OpenAI equivalent
// (documents, thinking history, server tools) are dropped.
func AnthropicToOpenAIRequest(body []byte, upstreamModel string, cloud bool) ([]byte, error) {
	var q messagesRead
	if !readMessagesRequest(body, &q) {
		// Its own value: q given to json.Unmarshal would be on the heap
		// for the fast path too.
		in := new(AnthropicRequest)
		if err := json.Unmarshal(body, in); err != nil {
			return nil, BadRequest("messages", "invalid request body: "+jsonErrText(err))
		}
		q.in = *in
	}
	return messagesToChat(&q, len(body), upstreamModel, cloud)
}

// messagesToChat is AnthropicToOpenAIRequest after the read; size is the
// request body's length.
func messagesToChat(q *messagesRead, size int, upstreamModel string, cloud bool) ([]byte, error) {
	in := &q.in
	out := chatRequest{
		Model:       upstreamModel,
		Stream:      in.Stream,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stop:        in.StopSequences,
	}
	if in.MaxTokens < 0 {
		return nil, BadRequest("max_tokens", "max_tokens must be at least 1")
	}
	if n := in.MaxTokens; n != 0 && cloud {
		out.MaxCompletionTokens = &n
	} else if n != 0 {
		out.MaxTokens = &n
	}
	if in.Stream {
		// The ledger needs the usage chunk whatever the client asked.
		out.StreamOptions = &OpenAIStreamOpts{IncludeUsage: true}
	}
	if in.Metadata != nil {
		out.User = in.Metadata.UserID
	}

	out.Messages = make([]chatMessage, 0, len(in.Messages)+1)
	if sys, err := q.systemText(); err != nil {
		return nil, err
	} else if sys != "" {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: sys})
	}
	var blocks []AnthropicBlock
	for i := range in.Messages {
		m := &in.Messages[i]
		var err error
		blocks, err = q.content(blocks[:0], i)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "system":
			// Claude Code sends these inside messages; the provider would
			// refuse them, OpenAI takes them as they are.
			if text := joinText(blocks); text != "" {
				out.Messages = append(out.Messages, chatMessage{Role: "system", Content: text})
			}
		case "user":
			out.Messages, err = appendUserTurn(out.Messages, blocks, i)
		case "assistant":
			out.Messages, err = appendAssistantTurn(out.Messages, blocks, i)
		default:
			return nil, BadRequest(fmt.Sprintf("messages[%d].role", i), "unsupported message role "+strconv.Quote(m.Role))
		}
		if err != nil {
			return nil, err
		}
	}

	if !cloud {
		out.Messages = foldSystemMessages(out.Messages)
	}

	var tools []OpenAITool
	for i := range in.Tools {
		t := &in.Tools[i]
		// Server tools (web_search_..., bash_..., text_editor_...) run at
		// Anthropic and have no meaning elsewhere.
		if t.Type != "" && t.Type != "custom" {
			continue
		}
		if t.Name == "" {
			return nil, BadRequest(fmt.Sprintf("tools[%d].name", i), "tool has no name")
		}
		schema := t.InputSchema
		if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(emptyObjectSchema)
		}
		tools = append(tools, OpenAITool{Type: "function", Function: OpenAIFunction{
			Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	if tc := in.ToolChoice; tc != nil && len(tools) > 0 {
		switch tc.Type {
		case "auto", "":
			out.ToolChoice = json.RawMessage(`"auto"`)
		case "any":
			out.ToolChoice = json.RawMessage(`"required"`)
		case "none":
			out.ToolChoice = json.RawMessage(`"none"`)
		case "tool":
			if tc.Name == "" {
				return nil, BadRequest("tool_choice.name", "tool_choice of type tool needs a name")
			}
			out.ToolChoice = jsonfast.AppendMarshalString(append(json.RawMessage(nil), `{"type":"function","function":{"name":`...), tc.Name)
			out.ToolChoice = append(out.ToolChoice, "}}"...)
		default:
			return nil, BadRequest("tool_choice.type", "unsupported tool_choice type "+strconv.Quote(tc.Type))
		}
		if tc.DisableParallelToolUse && tc.Type != "none" {
			f := false
			out.ParallelToolCalls = &f
		}
	}
	// The chat request is about the size of the Messages one; escapes
	// and the tools' wrapping add a little.
	size += 512
	for i := range tools {
		size += len(tools[i].Function.Description)/8 + 64
	}
	b := appendChatRequest(make([]byte, 0, size), &out)
	if len(tools) == 0 {
		return b, nil
	}
	return appendOpenAITools(b[:len(b)-1], tools), nil
}

// appendOpenAITools appends `,"tools":[...]}` to an encoded object missing
// its closing brace. Claude Code's tool schemas are most of its request;
// they are copied verbatim (json.Unmarshal already validated them) where
// appendChatRequest, like json.Marshal, would scan and compact every one
// again.
func appendOpenAITools(dst []byte, tools []OpenAITool) []byte {
	dst = append(dst, `,"tools":[`...)
	for i := range tools {
		f := &tools[i].Function
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"function","function":{"name":`...)
		dst = jsonfast.AppendJSONString(dst, f.Name)
		if f.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = jsonfast.AppendJSONString(dst, f.Description)
		}
		dst = append(dst, `,"parameters":`...)
		dst = append(dst, f.Parameters...)
		dst = append(dst, "}}"...)
	}
	return append(dst, "]}"...)
}

// anthropicBlocks decodes content that is a string or a block list into
// dst. A string comes back as one text block. msg is the message index the
// error names, or -1 for the system prompt.
func anthropicBlocks(dst []AnthropicBlock, raw json.RawMessage, msg int) ([]AnthropicBlock, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return dst, nil
	}
	if raw[0] == '"' {
		// Tool results' contents are mostly strings: a valid token is
		// decoded as encoding/json would, anything else is left to it.
		if s, ok := jsonfast.DecodeStringToken(raw); ok {
			return append(dst, AnthropicBlock{Type: "text", Text: s}), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, contentError(msg)
		}
		return append(dst, AnthropicBlock{Type: "text", Text: s}), nil
	}
	var blocks []AnthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, contentError(msg)
	}
	return append(dst, blocks...), nil
}

func contentError(msg int) *APIError {
	param := "system"
	if msg >= 0 {
		param = fmt.Sprintf("messages[%d].content", msg)
	}
	return BadRequest(param, "content must be a string or an array of content blocks")
}

// anthropicSystemText flattens `system` (a string or text blocks).
func anthropicSystemText(raw json.RawMessage) (string, error) {
	blocks, err := anthropicBlocks(nil, raw, -1)
	if err != nil {
		return "", err
	}
	return joinText(blocks), nil
}

// joinText concatenates the text blocks with newlines, skipping others.
func joinText(blocks []AnthropicBlock) string {
	n := 0
	var only string
	for i := range blocks {
		if blocks[i].Type == "text" && blocks[i].Text != "" {
			n++
			only = blocks[i].Text
		}
	}
	if n <= 1 {
		return only
	}
	var b strings.Builder
	for i := range blocks {
		if blocks[i].Type == "text" && blocks[i].Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blocks[i].Text)
		}
	}
	return b.String()
}

// appendUserTurn emits one tool message per tool_result, then the turn's
// text and images as a user message, since OpenAI wants tool results
// directly after the assistant turn that called them.
func appendUserTurn(msgs []chatMessage, blocks []AnthropicBlock, i int) ([]chatMessage, error) {
	var parts []chatPart
	for j := range blocks {
		b := &blocks[j]
		switch b.Type {
		case "tool_result":
			text, err := toolResultText(b)
			if err != nil {
				return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].content", i, j), err.Error())
			}
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
		case "text":
			if b.Text != "" {
				parts = append(parts, chatPart{Type: "text", Text: b.Text})
			}
		case "image":
			if url := imageURL(b.Source); url != "" {
				parts = append(parts, chatPart{Type: "image_url", ImageURL: &OpenAIImageURL{URL: url}})
			}
		}
	}
	switch {
	case len(parts) == 0:
	case len(parts) == 1 && parts[0].Type == "text":
		msgs = append(msgs, chatMessage{Role: "user", Content: parts[0].Text})
	default:
		msgs = append(msgs, chatMessage{Role: "user", Content: parts})
	}
	return msgs, nil
}

func imageURL(src *AnthropicSource) string {
	if src == nil {
		return ""
	}
	switch src.Type {
	case "base64":
		if src.MediaType == "" || src.Data == "" {
			return ""
		}
		return "data:" + src.MediaType + ";base64," + src.Data
	case "url":
		return src.URL
	}
	return ""
}

// toolResultText flattens a tool_result's content to the text of a tool
// message: its text blocks, and each tool_reference (the tools a
// client-side tool search loaded, whose schemas the client sends in
// tools) as a line naming the tool, so the model is not answered with
// nothing. Images inside results have no place there and are dropped.
func toolResultText(b *AnthropicBlock) (string, error) {
	inner, err := anthropicBlocks(nil, b.Content, -1)
	if err != nil {
		return "", constError("tool_result content must be a string or an array of content blocks")
	}
	text := joinText(inner)
	if refs := toolReferenceText(inner); refs != "" {
		if text != "" {
			text += "\n"
		}
		text += refs
	}
	if b.IsError {
		text = toolErrorPrefix + text
	}
	return text, nil
}

// toolReferenceText is one "Tool loaded: name" line per tool_reference
// block, "" when there are none.
func toolReferenceText(blocks []AnthropicBlock) string {
	var b strings.Builder
	for i := range blocks {
		if blocks[i].Type != "tool_reference" || blocks[i].ToolName == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(toolLoaded)
		b.WriteString(blocks[i].ToolName)
	}
	return b.String()
}

func appendAssistantTurn(msgs []chatMessage, blocks []AnthropicBlock, i int) ([]chatMessage, error) {
	var calls []OpenAIToolCall
	for j := range blocks {
		b := &blocks[j]
		if b.Type != "tool_use" {
			continue
		}
		args := "{}"
		if in := bytes.TrimSpace(b.Input); len(in) > 0 && !bytes.Equal(in, []byte("null")) {
			args = string(in)
		}
		if b.ID == "" || b.Name == "" {
			return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d]", i, j), "tool_use block needs an id and a name")
		}
		calls = append(calls, OpenAIToolCall{ID: b.ID, Type: "function",
			Function: OpenAIFunctionCall{Name: b.Name, Arguments: args}})
	}
	msg := chatMessage{Role: "assistant", ToolCalls: calls}
	if text := joinText(blocks); text != "" {
		msg.Content = text
	} else if len(calls) == 0 {
		// Thinking-only history: nothing OpenAI can use.
		return msgs, nil
	}
	return append(msgs, msg), nil
}

// foldSystemMessages moves every system message into one leading system
// message. Claude Code puts system messages between turns; the chat
// templates of many local models (Mistral's, Gemma's, strict Llama ones)
// accept a system message only first and refuse the request otherwise.
func foldSystemMessages(msgs []chatMessage) []chatMessage {
	var extra []string
	kept := msgs[:0:0]
	for i, m := range msgs {
		if m.Role == "system" && i > 0 {
			if text, ok := m.Content.(string); ok {
				extra = append(extra, text)
				continue
			}
		}
		kept = append(kept, m)
	}
	if len(extra) == 0 {
		return msgs
	}
	joined := strings.Join(extra, "\n\n")
	if len(kept) > 0 && kept[0].Role == "system" {
		if first, ok := kept[0].Content.(string); ok {
			kept[0].Content = first + "\n\n" + joined
			return kept
		}
	}
	return append([]chatMessage{{Role: "system", Content: joined}}, kept...)
}
