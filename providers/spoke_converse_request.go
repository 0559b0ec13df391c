package providers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// ConverseTurn is one Bedrock Converse or ConverseStream request parsed
// once. Like a Gemini turn it reaches every upstream through the chat hub:
// it is written as a chat request, and the answer comes back as chat and is
// turned into Converse's output (docs/wire-formats.md §8).
type ConverseTurn struct {
	req converseRequest
	// Alias is the model the request resolved to.
	Alias string
	// start is when the request was read: Converse answers report their
	// latency (metrics.latencyMs).
	start time.Time
	size  int
}

// The Converse request, as the AWS API reference and the SDKs' model
// define it. Only what a translation reads is typed; the rest is checked
// for presence where the gateway cannot honour it.
type converseRequest struct {
	Messages                          []converseMessage   `json:"messages"`
	System                            []converseBlock     `json:"system"`
	InferenceConfig                   *converseInference  `json:"inferenceConfig"`
	ToolConfig                        *converseToolConfig `json:"toolConfig"`
	AdditionalModelRequestFields      json.RawMessage     `json:"additionalModelRequestFields"`
	AdditionalModelResponseFieldPaths json.RawMessage     `json:"additionalModelResponseFieldPaths"`
	GuardrailConfig                   json.RawMessage     `json:"guardrailConfig"`
	PromptVariables                   json.RawMessage     `json:"promptVariables"`
	RequestMetadata                   map[string]string   `json:"requestMetadata"`
	PerformanceConfig                 json.RawMessage     `json:"performanceConfig"`
	ServiceTier                       json.RawMessage     `json:"serviceTier"`
	OutputConfig                      *converseOutputConf `json:"outputConfig"`
}

// converseOutputConf is OutputConfig: structured output, whose JSON
// schema comes as a string, and a reasoning effort.
type converseOutputConf struct {
	TextFormat *struct {
		Type      string `json:"type"`
		Structure struct {
			JSONSchema *struct {
				Schema      string `json:"schema"`
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"jsonSchema"`
		} `json:"structure"`
	} `json:"textFormat"`
	Effort string `json:"effort"`
}

type converseMessage struct {
	Role    string          `json:"role"`
	Content []converseBlock `json:"content"`
}

// converseBlock is a ContentBlock (a union: one member set) or, in system,
// a SystemContentBlock (text, cachePoint, guardContent).
type converseBlock struct {
	Text             *string               `json:"text"`
	Image            *converseMedia        `json:"image"`
	Document         *converseMedia        `json:"document"`
	Video            *converseMedia        `json:"video"`
	Audio            *converseMedia        `json:"audio"`
	ToolUse          *converseToolUse      `json:"toolUse"`
	ToolResult       *converseToolResult   `json:"toolResult"`
	ReasoningContent *converseReasoning    `json:"reasoningContent"`
	CachePoint       json.RawMessage       `json:"cachePoint"`
	GuardContent     json.RawMessage       `json:"guardContent"`
	CitationsContent *converseCitationsRef `json:"citationsContent"`
}

// converseMedia is an ImageBlock, DocumentBlock, VideoBlock or AudioBlock.
type converseMedia struct {
	Format string `json:"format"`
	Name   string `json:"name"`
	Source struct {
		Bytes      *string         `json:"bytes"` // base64, as blobs are in JSON
		Text       *string         `json:"text"`  // a document's text source
		S3Location json.RawMessage `json:"s3Location"`
		URI        string          `json:"uri"`
	} `json:"source"`
}

type converseToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type converseToolResult struct {
	ToolUseID string               `json:"toolUseId"`
	Content   []converseResultPart `json:"content"`
	Status    string               `json:"status"`
}

type converseResultPart struct {
	Text     *string         `json:"text"`
	JSON     json.RawMessage `json:"json"`
	Image    *converseMedia  `json:"image"`
	Document *converseMedia  `json:"document"`
	Video    *converseMedia  `json:"video"`
}

type converseReasoning struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature"`
	} `json:"reasoningText"`
	RedactedContent string `json:"redactedContent"` // base64
}

// converseCitationsRef is a citations block sent back in history: only its
// generated text matters to the next turn.
type converseCitationsRef struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

type converseInference struct {
	MaxTokens     *int64   `json:"maxTokens"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"topP"`
	StopSequences []string `json:"stopSequences"`
}

type converseToolConfig struct {
	Tools      []converseTool `json:"tools"`
	ToolChoice *struct {
		Auto json.RawMessage `json:"auto"`
		Any  json.RawMessage `json:"any"`
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool"`
	} `json:"toolChoice"`
}

type converseTool struct {
	ToolSpec *struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
		Strict *bool `json:"strict"`
	} `json:"toolSpec"`
	SystemTool json.RawMessage `json:"systemTool"`
	CachePoint json.RawMessage `json:"cachePoint"`
}

// ParseConverseRequest reads a Converse body for model (the URL's model id
// mapped to an alias: Converse's body names none); stream is whether it
// came to /converse-stream.
func ParseConverseRequest(body []byte, model string, stream bool) (RequestInfo, error) {
	t := &ConverseTurn{size: len(body), start: time.Now()}
	if !jsonfast.Valid(body) {
		return RequestInfo{}, invalidJSON(body)
	}
	if b := trimSpace(body); len(b) == 0 || b[0] != '{' {
		return RequestInfo{}, BadRequest("", "request body must be a JSON object")
	}
	if err := json.Unmarshal(body, &t.req); err != nil {
		return RequestInfo{}, decodeError(err)
	}
	if err := t.req.check(); err != nil {
		return RequestInfo{}, err
	}
	return RequestInfo{Model: model, Stream: stream, IncludeUsage: true, Turn: t}, nil
}

// check refuses what the gateway cannot do as Bedrock would, each with
// the field and the fix.
func (r *converseRequest) check() error {
	if isSet(r.PromptVariables) {
		return BadRequest("promptVariables", "promptVariables fill a Bedrock Prompt Management prompt, which this gateway does not keep; send messages instead")
	}
	if len(r.Messages) == 0 {
		return BadRequest("messages", "messages is required: a list of {role, content} objects")
	}
	if isSet(r.GuardrailConfig) {
		return BadRequest("guardrailConfig", "Bedrock Guardrails run on AWS and not through this gateway; leave guardrailConfig out")
	}
	if oc := r.OutputConfig; oc != nil && oc.TextFormat != nil {
		js := oc.TextFormat.Structure.JSONSchema
		if oc.TextFormat.Type != "json_schema" || js == nil || !json.Valid([]byte(js.Schema)) {
			return BadRequest("outputConfig.textFormat", `textFormat takes {"type":"json_schema","structure":{"jsonSchema":{"schema":"<a JSON schema, as a string>"}}}`)
		}
	}
	if c := r.InferenceConfig; c != nil && c.MaxTokens != nil && *c.MaxTokens < 1 {
		return BadRequest("inferenceConfig.maxTokens", "inferenceConfig.maxTokens must be at least 1")
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return BadRequest(fmt.Sprintf("messages.%d.role", i), `role must be "user" or "assistant"`)
		}
	}
	if tc := r.ToolConfig; tc != nil {
		for i, tool := range tc.Tools {
			switch {
			case tool.ToolSpec != nil:
				if tool.ToolSpec.Name == "" {
					return BadRequest(fmt.Sprintf("toolConfig.tools.%d.toolSpec.name", i), "a tool needs a name")
				}
			case isSet(tool.SystemTool):
				return BadRequest(fmt.Sprintf("toolConfig.tools.%d.systemTool", i), "Bedrock's system tools run on AWS and not through this gateway; declare a toolSpec instead")
			}
		}
	}
	return nil
}

// isSet reports whether a raw member was sent with a value.
func isSet(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// toChat writes the turn as a chat completions request.
func (t *ConverseTurn) toChat(model string, stream bool, o chatOptions) ([]byte, error) {
	out, err := t.buildChat(model, stream, o)
	return encodeChat(out, err, t.size)
}

func (t *ConverseTurn) buildChat(model string, stream bool, o chatOptions) (*chatRequest, error) {
	r := &t.req
	out := chatRequest{Model: model}
	if stream {
		out.Stream = true
		out.StreamOptions = &OpenAIStreamOpts{IncludeUsage: true}
	}
	var system []string
	for _, b := range r.System {
		if b.Text != nil && *b.Text != "" {
			system = append(system, *b.Text)
		}
	}
	if len(system) > 0 {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: strings.Join(system, "\n")})
	}
	msgs, err := t.chatMessages(o)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, BadRequest("messages", "messages hold nothing to send: every content block is empty")
	}
	out.Messages = append(out.Messages, msgs...)
	if c := r.InferenceConfig; c != nil {
		out.Temperature, out.TopP, out.Stop = c.Temperature, c.TopP, c.StopSequences
		if c.MaxTokens != nil {
			if o.OpenAICloud {
				out.MaxCompletionTokens = c.MaxTokens
			} else {
				out.MaxTokens = c.MaxTokens
			}
		}
	}
	if tc := r.ToolConfig; tc != nil {
		for _, tool := range tc.Tools {
			s := tool.ToolSpec
			if s == nil {
				continue // a cachePoint
			}
			schema := s.InputSchema.JSON
			if !isSet(schema) {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			out.Tools = append(out.Tools, OpenAITool{Type: "function", Function: OpenAIFunction{Name: s.Name, Description: s.Description, Parameters: schema, Strict: s.Strict}})
		}
		if c := tc.ToolChoice; c != nil && len(out.Tools) > 0 {
			switch {
			case c.Tool != nil:
				out.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Tool.Name}})
			case isSet(c.Any):
				out.ToolChoice = json.RawMessage(`"required"`)
			}
		}
	}
	out.ReasoningEffort = converseEffort(r.AdditionalModelRequestFields, o)
	if oc := r.OutputConfig; oc != nil {
		if oc.Effort != "" {
			out.ReasoningEffort = strings.ToLower(oc.Effort)
		}
		if tf := oc.TextFormat; tf != nil {
			js := tf.Structure.JSONSchema
			name := js.Name
			if name == "" {
				name = "response"
			}
			spec := map[string]any{"name": name, "schema": json.RawMessage(js.Schema)}
			if js.Description != "" {
				spec["description"] = js.Description
			}
			out.ResponseFormat, _ = json.Marshal(map[string]any{"type": "json_schema", "json_schema": spec})
		}
	}
	return &out, nil
}

// converseEffort reads the thinking a caller asks for in
// additionalModelRequestFields (Anthropic models on Bedrock take
// {"thinking":{"type":"enabled","budget_tokens":n}}; others
// {"reasoning_effort":"low"} or {"reasoningConfig":{"maxReasoningEffort":…}})
// as the hub's reasoning effort.
func converseEffort(fields json.RawMessage, o chatOptions) string {
	if !isSet(fields) {
		return ""
	}
	var f struct {
		Thinking *struct {
			Type         string `json:"type"`
			BudgetTokens int64  `json:"budget_tokens"`
		} `json:"thinking"`
		ReasoningEffort string `json:"reasoning_effort"`
		ReasoningConfig *struct {
			MaxReasoningEffort string `json:"maxReasoningEffort"`
		} `json:"reasoningConfig"`
	}
	if json.Unmarshal(fields, &f) != nil {
		return ""
	}
	effort := f.ReasoningEffort
	switch {
	case f.ReasoningConfig != nil && f.ReasoningConfig.MaxReasoningEffort != "":
		effort = f.ReasoningConfig.MaxReasoningEffort
	case f.Thinking != nil && f.Thinking.Type == "enabled":
		switch b := f.Thinking.BudgetTokens; {
		case b <= 1024:
			effort = "low"
		case b <= 8192:
			effort = "medium"
		default:
			effort = "high"
		}
	}
	effort = strings.ToLower(effort)
	if effort == "minimal" && o.Anthropic {
		effort = "low"
	}
	return effort
}

// chatMessages turns messages into chat messages: an assistant's toolUse
// blocks become tool calls, a user's toolResult blocks tool messages (in
// their order, before the user's own text).
func (t *ConverseTurn) chatMessages(o chatOptions) ([]chatMessage, error) {
	var out []chatMessage
	for i, m := range t.req.Messages {
		at := func(j int, field string) string { return fmt.Sprintf("messages.%d.content.%d%s", i, j, field) }
		if m.Role == "assistant" {
			msg := chatMessage{Role: "assistant"}
			var text strings.Builder
			for j, b := range m.Content {
				switch {
				case b.Text != nil:
					text.WriteString(*b.Text)
				case b.CitationsContent != nil:
					for _, c := range b.CitationsContent.Content {
						text.WriteString(c.Text)
					}
				case b.ToolUse != nil:
					tu := b.ToolUse
					if tu.Name == "" || tu.ToolUseID == "" {
						return nil, BadRequest(at(j, ".toolUse"), "a toolUse block needs a toolUseId and a name")
					}
					args := "{}"
					if a := bytes.TrimSpace(tu.Input); isSet(a) {
						args = string(a)
					}
					msg.ToolCalls = append(msg.ToolCalls, OpenAIToolCall{ID: tu.ToolUseID, Type: "function", Function: OpenAIFunctionCall{Name: tu.Name, Arguments: args}})
				case b.ReasoningContent != nil:
					if !o.Anthropic {
						continue // thinking is history only Anthropic takes back
					}
					rc := b.ReasoningContent
					if rt := rc.ReasoningText; rt != nil && rt.Signature != "" {
						msg.ThinkingBlocks = append(msg.ThinkingBlocks, AnthropicBlock{Type: "thinking", Thinking: rt.Text, Signature: rt.Signature})
					} else if rc.RedactedContent != "" {
						msg.ThinkingBlocks = append(msg.ThinkingBlocks, AnthropicBlock{Type: "redacted_thinking", Data: rc.RedactedContent})
					}
				case b.Image != nil || b.Document != nil || b.Video != nil || b.Audio != nil:
					return nil, BadRequest(at(j, ""), "an assistant message holds text, toolUse and reasoningContent only")
				}
			}
			if text.Len() > 0 {
				msg.Content = text.String()
			}
			if msg.Content == nil && len(msg.ToolCalls) == 0 {
				continue
			}
			out = append(out, msg)
			continue
		}
		var parts []chatPart
		var extra []chatPart // images and documents returned by tools
		for j, b := range m.Content {
			switch {
			case b.ToolResult != nil:
				tr := b.ToolResult
				if tr.ToolUseID == "" {
					return nil, BadRequest(at(j, ".toolResult.toolUseId"), "a toolResult block needs the toolUseId it answers")
				}
				var text strings.Builder
				for k, p := range tr.Content {
					switch {
					case p.Text != nil:
						text.WriteString(*p.Text)
					case isSet(p.JSON):
						text.Write(bytes.TrimSpace(p.JSON))
					case p.Image != nil || p.Document != nil || p.Video != nil:
						media, kind := p.Image, "image"
						if p.Document != nil {
							media, kind = p.Document, "document"
						} else if p.Video != nil {
							media, kind = p.Video, "video"
						}
						cp, err := converseMediaPart(media, kind, at(j, fmt.Sprintf(".toolResult.content.%d.%s", k, kind)))
						if err != nil {
							return nil, err
						}
						extra = append(extra, cp)
					}
				}
				content := text.String()
				if tr.Status == "error" && content == "" {
					content = "error"
				}
				out = append(out, chatMessage{Role: "tool", ToolCallID: tr.ToolUseID, Content: content})
			case b.Text != nil:
				if *b.Text != "" {
					parts = append(parts, chatPart{Type: "text", Text: *b.Text})
				}
			case b.Image != nil:
				cp, err := converseMediaPart(b.Image, "image", at(j, ".image"))
				if err != nil {
					return nil, err
				}
				parts = append(parts, cp)
			case b.Document != nil:
				cp, err := converseMediaPart(b.Document, "document", at(j, ".document"))
				if err != nil {
					return nil, err
				}
				parts = append(parts, cp)
			case b.Video != nil || b.Audio != nil:
				return nil, BadRequest(at(j, ""), "video and audio blocks are not translated by this gateway; send text, images or documents")
			case b.ToolUse != nil:
				return nil, BadRequest(at(j, ".toolUse"), "toolUse blocks belong in an assistant message")
			}
		}
		out = appendUserMessage(out, append(extra, parts...))
	}
	return out, nil
}

// converseMediaPart turns an image or document block into a chat part: an
// image as a data URL, a text document (txt, md, csv, html) as its text,
// any other document as a file.
func converseMediaPart(m *converseMedia, kind, at string) (chatPart, error) {
	src := &m.Source
	if isSet(src.S3Location) || src.URI != "" {
		return chatPart{}, BadRequest(at+".source", "S3 locations are read by Bedrock itself, not by this gateway; send the bytes")
	}
	if kind == "document" && src.Text != nil {
		return chatPart{Type: "text", Text: *src.Text}, nil
	}
	if src.Bytes == nil || *src.Bytes == "" {
		return chatPart{}, BadRequest(at+".source.bytes", "source.bytes is required")
	}
	data := *src.Bytes
	switch kind {
	case "image":
		mime := converseMediaType(m.Format)
		if !strings.HasPrefix(mime, "image/") {
			return chatPart{}, BadRequest(at+".format", "an image's format must be png, jpeg, gif or webp")
		}
		return chatPart{Type: "image_url", ImageURL: &OpenAIImageURL{URL: "data:" + mime + ";base64," + data}}, nil
	case "document":
		switch m.Format {
		case "txt", "md", "csv", "html":
			text, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				return chatPart{}, BadRequest(at+".source.bytes", "source.bytes must be base64")
			}
			return chatPart{Type: "text", Text: string(text)}, nil
		}
		mime := converseMediaType(m.Format)
		if !strings.HasPrefix(mime, "application/") {
			return chatPart{}, BadRequest(at+".format", "a document's format must be pdf, csv, doc, docx, xls, xlsx, html, txt or md")
		}
		name := m.Name
		if name == "" {
			name = "document"
		}
		return chatPart{Type: "file", File: &chatFile{Filename: name + "." + m.Format, FileData: "data:" + mime + ";base64," + data}}, nil
	}
	return chatPart{}, BadRequest(at, kind+" blocks are not translated by this gateway; send text, images or documents")
}

// converseMediaType is the MIME type of an image or document format, ""
// for one Converse does not name.
func converseMediaType(format string) string {
	switch format {
	case "png", "jpeg", "gif", "webp":
		return "image/" + format
	case "pdf":
		return "application/pdf"
	case "doc":
		return "application/msword"
	case "docx":
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	case "xls":
		return "application/vnd.ms-excel"
	case "xlsx":
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	}
	return ""
}
