package providers

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// GeminiTurn is one Gemini API request (generateContent,
// streamGenerateContent, countTokens) parsed once. Like a Responses turn
// it reaches every upstream through the chat hub: it is written as a chat
// request, and the answer comes back as chat and is turned into Gemini's
// GenerateContentResponse (docs/architecture.md, "The translation matrix
// and the hub").
type GeminiTurn struct {
	req geminiRequest
	// Alias is the model the client asked for, resolved.
	Alias string
	// Answered is the model the upstream reported answering, named in
	// answers (modelVersion); the alias until an answer names one.
	Answered string
	// ResponseID is one id for the whole answer, every chunk included.
	ResponseID string
	// includeThoughts: the caller wants reasoning back as thought parts.
	includeThoughts bool
	size            int
}

// ParseGeminiRequest reads a Gemini request for model (from the URL path:
// Gemini's body has no model). countTokens bodies may wrap the request in
// generateContentRequest.
func ParseGeminiRequest(body []byte, model string, stream bool) (RequestInfo, error) {
	t := &GeminiTurn{size: len(body), ResponseID: rand.Text()[:16]}
	if !jsonfast.Valid(body) || !readGeminiRequest(body, &t.req) {
		// The slow path: exactly encoding/json's reading and errors.
		t.req = geminiRequest{}
		if err := json.Unmarshal(body, &t.req); err != nil {
			if _, syntax := err.(*json.SyntaxError); syntax {
				return RequestInfo{}, invalidJSON(body)
			}
			return RequestInfo{}, decodeError(err)
		}
		// Only encoding/json reads proto field names (the fast path
		// leaves them to it): fold them into the JSON names.
		if err := t.req.unify(); err != nil {
			return RequestInfo{}, err
		}
	}
	if inner := t.req.GenerateContentRequest; inner != nil {
		t.req = *inner
	}
	if len(t.req.Contents) == 0 {
		return RequestInfo{}, BadRequest("contents", "* GenerateContentRequest.contents: contents is not specified")
	}
	if t.req.CachedContent != "" {
		return RequestInfo{}, BadRequest("cachedContent", "cachedContent refers to server-side state this gateway does not keep; send the contents instead")
	}
	for i, tool := range t.req.Tools {
		if tool.GoogleSearch != nil || tool.CodeExecution != nil || tool.URLContext != nil || tool.GoogleMaps != nil ||
			tool.FileSearch != nil || tool.GoogleSearchRetrieval != nil {
			return RequestInfo{}, BadRequest(fmt.Sprintf("tools[%d]", i), "built-in Google tools (googleSearch, codeExecution, urlContext, googleMaps, fileSearch) run on Google's servers and are not available through this gateway; declare functions instead")
		}
	}
	if g := t.req.GenerationConfig; g != nil && g.MaxOutputTokens != nil && *g.MaxOutputTokens < 1 {
		return RequestInfo{}, BadRequest("generationConfig.maxOutputTokens", "generationConfig.maxOutputTokens must be at least 1")
	}
	if g := t.req.GenerationConfig; g != nil && g.ThinkingConfig != nil {
		tc := g.ThinkingConfig
		if tc.ThinkingBudget != nil && tc.ThinkingLevel != "" {
			return RequestInfo{}, BadRequest("generationConfig.thinkingConfig", "thinkingBudget and thinkingLevel cannot both be set")
		}
		t.includeThoughts = tc.IncludeThoughts
	}
	return RequestInfo{Model: model, Stream: stream, IncludeUsage: true, Turn: t}, nil
}

type geminiChatAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// toChat writes the turn as a chat completions request.
func (t *GeminiTurn) toChat(model string, stream bool, o chatOptions) ([]byte, error) {
	out, err := t.buildChat(model, stream, o)
	return encodeChat(out, err, t.size)
}

// buildChat maps the turn onto the chat request's fields.
func (t *GeminiTurn) buildChat(model string, stream bool, o chatOptions) (*chatRequest, error) {
	r := &t.req
	out := chatRequest{Model: model}
	if stream {
		out.Stream = true
		out.StreamOptions = &OpenAIStreamOpts{IncludeUsage: true}
	}
	if si := r.SystemInstruction; si != nil {
		var text []string
		for _, p := range si.Parts {
			if p.Text != "" {
				text = append(text, p.Text)
			}
		}
		if len(text) > 0 {
			out.Messages = append(out.Messages, chatMessage{Role: "system", Content: strings.Join(text, "\n")})
		}
	}
	msgs, err := t.chatMessages(o)
	if err != nil {
		return nil, err
	}
	out.Messages = append(out.Messages, msgs...)
	if len(msgs) == 0 {
		return nil, BadRequest("contents", "contents hold nothing to send: every part is a thought summary or empty")
	}
	for i, tool := range r.Tools {
		for j, d := range tool.FunctionDeclarations {
			if d.Name == "" {
				return nil, BadRequest(fmt.Sprintf("tools[%d].functionDeclarations[%d].name", i, j), "a function declaration needs a name")
			}
			schema := d.ParametersJSONSchema
			if len(schema) == 0 {
				schema = d.Parameters
			}
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			} else {
				schema = jsonSchemaFromGemini(schema)
			}
			out.Tools = append(out.Tools, OpenAITool{Type: "function", Function: OpenAIFunction{Name: d.Name, Description: d.Description, Parameters: schema}})
		}
	}
	if tc := r.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil && len(out.Tools) > 0 {
		switch fc := tc.FunctionCallingConfig; strings.ToUpper(fc.Mode) {
		case "ANY":
			if len(fc.AllowedFunctionNames) == 1 {
				out.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": fc.AllowedFunctionNames[0]}})
			} else {
				out.ToolChoice = json.RawMessage(`"required"`)
			}
		case "NONE":
			out.ToolChoice = json.RawMessage(`"none"`)
		case "AUTO", "VALIDATED", "", "MODE_UNSPECIFIED":
		default:
			return nil, BadRequest("toolConfig.functionCallingConfig.mode", "mode must be AUTO, ANY, NONE or VALIDATED")
		}
	}
	if g := r.GenerationConfig; g != nil {
		out.Temperature, out.TopP, out.Seed = g.Temperature, g.TopP, g.Seed
		out.FrequencyPenalty, out.PresencePenalty = g.FrequencyPenalty, g.PresencePenalty
		out.Stop = g.StopSequences
		if g.MaxOutputTokens != nil {
			if o.OpenAICloud {
				out.MaxCompletionTokens = g.MaxOutputTokens
			} else {
				out.MaxTokens = g.MaxOutputTokens
			}
		}
		if g.CandidateCount != nil && *g.CandidateCount > 1 {
			if o.Anthropic {
				return nil, BadRequest("generationConfig.candidateCount", "this model answers one candidate at a time; set candidateCount to 1")
			}
			out.N = g.CandidateCount
		}
		if g.ResponseMimeType == "application/json" {
			schema := g.ResponseJSONSchema
			if len(schema) == 0 {
				schema = g.ResponseSchema
			}
			if len(schema) > 0 {
				out.ResponseFormat, _ = json.Marshal(map[string]any{"type": "json_schema",
					"json_schema": map[string]any{"name": "response", "schema": jsonSchemaFromGemini(schema)}})
			} else {
				out.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
			}
		}
		if tc := g.ThinkingConfig; tc != nil {
			switch {
			case tc.ThinkingLevel != "":
				out.ReasoningEffort = strings.ToLower(tc.ThinkingLevel)
				if out.ReasoningEffort == "minimal" && o.Anthropic {
					out.ReasoningEffort = "low"
				}
			case tc.ThinkingBudget != nil:
				switch b := *tc.ThinkingBudget; {
				case b == 0:
				case b < 0:
					out.ReasoningEffort = "medium"
				case b <= 1024:
					out.ReasoningEffort = "low"
				case b <= 8192:
					out.ReasoningEffort = "medium"
				default:
					out.ReasoningEffort = "high"
				}
			}
		}
	}
	return &out, nil
}

// chatMessages turns contents into chat messages. Function calls without
// ids get minted ones, and responses without ids are paired with the
// preceding turn's calls by position, checking the name.
func (t *GeminiTurn) chatMessages(o chatOptions) ([]chatMessage, error) {
	var out []chatMessage
	var lastCalls []OpenAIToolCall
	for i, c := range t.req.Contents {
		at := func(j int, field string) string { return fmt.Sprintf("contents[%d].parts[%d]%s", i, j, field) }
		if c.Role == "model" {
			m := chatMessage{Role: "assistant"}
			var text strings.Builder
			lastCalls = lastCalls[:0:0]
			for j, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					fc := p.FunctionCall
					if fc.Name == "" {
						return nil, BadRequest(at(j, ".functionCall.name"), "a function call needs a name")
					}
					id := fc.ID
					if id == "" {
						id = newCallID()
					}
					args := "{}"
					if a := bytes.TrimSpace(fc.Args); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
						args = string(a)
					}
					call := OpenAIToolCall{ID: id, Type: "function", Function: OpenAIFunctionCall{Name: fc.Name, Arguments: args}}
					m.ToolCalls = append(m.ToolCalls, call)
					lastCalls = append(lastCalls, call)
					if o.Anthropic && len(m.ThinkingBlocks) == 0 {
						m.ThinkingBlocks = openThinking(p.ThoughtSignature)
					}
				case p.Thought:
					// Thought summaries are not history a model takes back.
				case p.Text != "":
					text.WriteString(p.Text)
				case p.ExecutableCode != nil:
					text.WriteString("\n" + string(p.ExecutableCode) + "\n")
				case p.CodeExecutionResult != nil:
					text.WriteString("\n" + string(p.CodeExecutionResult) + "\n")
				}
			}
			if text.Len() > 0 {
				m.Content = text.String()
			}
			if m.Content == nil && len(m.ToolCalls) == 0 {
				continue
			}
			out = append(out, m)
			continue
		}
		// user, or the legacy function/tool roles.
		var parts []chatPart
		var extra []chatPart // images returned by tools
		next := 0
		for j, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				fr := p.FunctionResponse
				id := fr.ID
				if id == "" {
					if next >= len(lastCalls) || (fr.Name != "" && lastCalls[next].Function.Name != fr.Name) {
						return nil, BadRequest(at(j, ".functionResponse"), fmt.Sprintf("functionResponse %q answers no function call of the previous model turn", fr.Name))
					}
					id = lastCalls[next].ID
				}
				next++
				out = append(out, chatMessage{Role: "tool", ToolCallID: id, Content: functionResponseText(fr.Response)})
				for k, fp := range fr.Parts {
					cp, err := geminiMediaPart(fp, at(j, fmt.Sprintf(".functionResponse.parts[%d]", k)))
					if err != nil {
						return nil, err
					}
					extra = append(extra, cp)
				}
			case p.Thought:
			case p.Text != "":
				parts = append(parts, chatPart{Type: "text", Text: p.Text})
			case p.InlineData != nil || p.FileData != nil:
				cp, err := geminiMediaPart(p, at(j, ""))
				if err != nil {
					return nil, err
				}
				parts = append(parts, cp)
			case p.FunctionCall != nil:
				return nil, BadRequest(at(j, ".functionCall"), "function calls belong in a model turn")
			}
		}
		out = appendUserMessage(out, append(extra, parts...))
	}
	return out, nil
}

// appendUserMessage appends a user message of parts, if any: its content a
// string when it is one text part, else the list.
func appendUserMessage(out []chatMessage, parts []chatPart) []chatMessage {
	switch {
	case len(parts) == 0:
		return out
	case len(parts) == 1 && parts[0].Type == "text":
		return append(out, chatMessage{Role: "user", Content: parts[0].Text})
	}
	return append(out, chatMessage{Role: "user", Content: parts})
}

// functionResponseText is a tool message's content: the output alone
// when it is the response's only member and a string (as Gemini CLI
// sends it), else the response as JSON.
func functionResponseText(resp json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(resp, &m) == nil && len(m) == 1 {
		var s string
		if raw, ok := m["output"]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	if len(bytes.TrimSpace(resp)) == 0 {
		return "{}"
	}
	return string(resp)
}

// geminiMediaPart maps inline data and file references onto chat parts.
func geminiMediaPart(p geminiPart, at string) (chatPart, error) {
	if d := p.InlineData; d != nil {
		switch mt := strings.ToLower(d.MimeType); {
		case strings.HasPrefix(mt, "image/"):
			return chatPart{Type: "image_url", ImageURL: &OpenAIImageURL{URL: "data:" + mt + ";base64," + d.Data}}, nil
		case mt == "application/pdf":
			return chatPart{Type: "file", File: &chatFile{Filename: "document.pdf", FileData: "data:application/pdf;base64," + d.Data}}, nil
		case mt == "audio/wav" || mt == "audio/x-wav":
			return chatPart{Type: "input_audio", InputAudio: &geminiChatAudio{Data: d.Data, Format: "wav"}}, nil
		case mt == "audio/mp3" || mt == "audio/mpeg":
			return chatPart{Type: "input_audio", InputAudio: &geminiChatAudio{Data: d.Data, Format: "mp3"}}, nil
		case mt == "text/plain":
			return chatPart{Type: "text", Text: decodeBase64Text(d.Data)}, nil
		}
		return chatPart{}, BadRequest(at+".inlineData.mimeType", fmt.Sprintf("inline data of type %q cannot be sent to this model; images, PDF, WAV/MP3 audio and plain text can", d.MimeType))
	}
	f := p.FileData
	if strings.HasPrefix(strings.ToLower(f.MimeType), "image/") && strings.HasPrefix(f.FileURI, "https://") {
		return chatPart{Type: "image_url", ImageURL: &OpenAIImageURL{URL: f.FileURI}}, nil
	}
	return chatPart{}, BadRequest(at+".fileData", "fileData other than an https image URL refers to Google's file storage, which this gateway cannot read; send the bytes as inlineData")
}

// jsonSchemaFromGemini turns Google's OpenAPI-subset Schema (uppercase
// types, nullable, propertyOrdering) into plain JSON Schema. A schema
// that is JSON Schema already passes unchanged in meaning.
func jsonSchemaFromGemini(raw json.RawMessage) json.RawMessage {
	if !geminiSchemaNeedsFix(raw) {
		return raw
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(fixGeminiSchema(v))
	if err != nil {
		return raw
	}
	return b
}

func fixGeminiSchema(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "propertyOrdering")
		nullable, _ := x["nullable"].(bool)
		delete(x, "nullable")
		for k, sub := range x {
			switch k {
			case "properties", "$defs", "definitions", "patternProperties":
				if m, ok := sub.(map[string]any); ok {
					for name, s := range m {
						m[name] = fixGeminiSchema(s)
					}
				}
			case "items", "additionalProperties", "not":
				x[k] = fixGeminiSchema(sub)
			case "anyOf", "oneOf", "allOf", "prefixItems":
				if list, ok := sub.([]any); ok {
					for i, s := range list {
						list[i] = fixGeminiSchema(s)
					}
				}
			}
		}
		if typ, ok := x["type"].(string); ok {
			typ = strings.ToLower(typ)
			if typ == "type_unspecified" {
				delete(x, "type")
			} else if nullable {
				x["type"] = []any{typ, "null"}
			} else {
				x["type"] = typ
			}
			if typ == "object" {
				if _, ok := x["properties"]; !ok {
					x["properties"] = map[string]any{}
				}
			}
		}
		return x
	case []any:
		for i, s := range x {
			x[i] = fixGeminiSchema(s)
		}
	}
	return v
}

func decodeBase64Text(data string) string {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return data
	}
	return string(b)
}

// geminiSchemaNeedsFix reports whether a schema has anything of Google's
// dialect in it (nullable, propertyOrdering, an uppercase type, an object
// type without properties), so plain JSON Schema, which is what Gemini CLI
// sends, skips the decode and re-encode.
func geminiSchemaNeedsFix(raw []byte) bool {
	if bytes.Contains(raw, []byte(`"nullable"`)) || bytes.Contains(raw, []byte(`"propertyOrdering"`)) {
		return true
	}
	objects := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(`"type"`))
		if j < 0 {
			break
		}
		k := i + j + len(`"type"`)
		for k < len(raw) && (raw[k] == ' ' || raw[k] == ':' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
			k++
		}
		if k+1 < len(raw) && raw[k] == '"' {
			if c := raw[k+1]; c >= 'A' && c <= 'Z' {
				return true
			}
			if bytes.HasPrefix(raw[k:], []byte(`"object"`)) {
				objects++
			}
		}
		i = k
	}
	return objects > bytes.Count(raw, []byte(`"properties"`))
}
