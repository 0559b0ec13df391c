package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// geminiSkipSignature is Google's documented value for a function call
// whose thought signature Gemini never issued (history from another model
// or a client that dropped it); Gemini 3 refuses the turn without one.
const geminiSkipSignature = "skip_thought_signature_validator"

// geminiCallExtra is the part of a tool call's extra_content the Gemini
// translation reads.
type geminiCallExtra struct {
	Google struct {
		ThoughtSignature string `json:"thought_signature"`
	} `json:"google"`
}

// geminiResponseFormat is the part of response_format the Gemini
// translation reads.
type geminiResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// decodeField decodes raw, the value of the member at path, into v, and
// words a type error as decoding the whole body into a type with v as the
// member's type would: the field path runs from the body's root.
func decodeField(raw json.RawMessage, path string, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		te.Field = strings.TrimSuffix(path+"."+te.Field, ".")
	}
	return decodeError(err)
}

// OpenAIToGeminiRequest writes a chat completions request as a Gemini
// generateContent body for model, mapping in reverse the fields
// GeminiTurn.toChat maps. The model and the stream choice travel in the
// URL, not the body.
func OpenAIToGeminiRequest(body []byte, model string) ([]byte, error) {
	var in OpenAIRequest
	if err := unmarshalOpenAIRequest(body, &in); err != nil {
		return nil, decodeError(err)
	}
	// Members read here past OpenAIRequest are checked first, as they
	// were when typed fields of the request: a type error in them fails
	// the request before any message is translated.
	var rf *geminiResponseFormat
	if err := decodeField(in.ResponseFormat, "response_format", &rf); err != nil {
		return nil, err
	}
	var sigs []string // each assistant tool call's thought signature, in order
	for _, m := range in.Messages {
		for _, tc := range m.ToolCalls {
			var extra geminiCallExtra
			if err := decodeField(tc.ExtraContent, "messages.tool_calls.extra_content", &extra); err != nil {
				return nil, err
			}
			if m.Role == "assistant" {
				sigs = append(sigs, extra.Google.ThoughtSignature)
			}
		}
	}
	var out geminiRequest
	var system []geminiPart
	names := map[string]string{} // call id → function name, for responses
	for i, m := range in.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			text, err := chatText(m.Content, at)
			if err != nil {
				return nil, err
			}
			if text != "" {
				system = append(system, geminiPart{Text: text})
			}
		case "user":
			parts, err := chatUserParts(m.Content, at)
			if err != nil {
				return nil, err
			}
			out.Contents = appendContent(out.Contents, "user", parts...)
		case "assistant":
			text, err := chatText(m.Content, at)
			if err != nil {
				return nil, err
			}
			var parts []geminiPart
			if text != "" {
				parts = append(parts, geminiPart{Text: text})
			}
			for j, tc := range m.ToolCalls {
				args := bytes.TrimSpace([]byte(tc.Function.Arguments))
				if len(args) == 0 {
					args = []byte("{}")
				}
				if !json.Valid(args) || args[0] != '{' {
					return nil, BadRequest(fmt.Sprintf("%s.tool_calls[%d].function.arguments", at, j), "arguments must be a JSON object for this model")
				}
				p := geminiPart{FunctionCall: &geminiFunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args}}
				sig := sigs[0]
				sigs = sigs[1:]
				if sig != "" {
					p.ThoughtSignature = sig
				} else if j == 0 {
					p.ThoughtSignature = geminiSkipSignature
				}
				names[tc.ID] = tc.Function.Name
				parts = append(parts, p)
			}
			if len(parts) > 0 {
				out.Contents = appendContent(out.Contents, "model", parts...)
			}
		case "tool", "function":
			text, err := chatText(m.Content, at)
			if err != nil {
				return nil, err
			}
			resp, _ := json.Marshal(map[string]string{"output": text})
			out.Contents = appendContent(out.Contents, "user", geminiPart{FunctionResponse: &geminiFunctionResult{
				ID: m.ToolCallID, Name: names[m.ToolCallID], Response: resp}})
		default:
			return nil, BadRequest(at+".role", fmt.Sprintf("unknown role %q", m.Role))
		}
	}
	if len(out.Contents) == 0 {
		return nil, BadRequest("messages", "messages must hold at least one user, assistant or tool message")
	}
	if len(system) > 0 {
		out.SystemInstruction = &geminiContent{Parts: system}
	}
	var decls []geminiFunctionDecl
	for _, t := range in.Tools {
		if t.Type != "" && t.Type != "function" {
			continue
		}
		decls = append(decls, geminiFunctionDecl{Name: t.Function.Name, Description: t.Function.Description, ParametersJSONSchema: t.Function.Parameters})
	}
	if len(decls) > 0 {
		out.Tools = []geminiTool{{FunctionDeclarations: decls}}
		if tc, err := geminiToolConfigFor(in.ToolChoice); err != nil {
			return nil, err
		} else {
			out.ToolConfig = tc
		}
	}
	g := &geminiGenConfig{Temperature: in.Temperature, TopP: in.TopP, Seed: in.Seed,
		FrequencyPenalty: in.FrequencyPenalty, PresencePenalty: in.PresencePenalty, CandidateCount: in.N}
	g.MaxOutputTokens = in.MaxCompletionTokens
	if g.MaxOutputTokens == nil {
		g.MaxOutputTokens = in.MaxTokens
	}
	if len(in.Stop) > 0 && string(in.Stop) != "null" {
		var one string
		if json.Unmarshal(in.Stop, &one) == nil {
			g.StopSequences = []string{one}
		} else if json.Unmarshal(in.Stop, &g.StopSequences) != nil {
			return nil, BadRequest("stop", "stop must be a string or a list of strings")
		}
	}
	if rf != nil {
		switch rf.Type {
		case "json_object":
			g.ResponseMimeType = "application/json"
		case "json_schema":
			g.ResponseMimeType = "application/json"
			if rf.JSONSchema != nil {
				g.ResponseJSONSchema = rf.JSONSchema.Schema
			}
		}
	}
	if e := in.ReasoningEffort; e != "" && e != "none" {
		tc := &geminiThinking{IncludeThoughts: true}
		// Gemini 3 takes a level, 2.5 a budget; both at once is a 400.
		if strings.HasPrefix(model, "gemini-2") {
			b := map[string]int64{"minimal": 512, "low": 1024, "medium": 8192, "high": 24576}[e]
			if b == 0 {
				b = -1
			}
			tc.ThinkingBudget = &b
		} else {
			tc.ThinkingLevel = strings.ToUpper(e)
		}
		g.ThinkingConfig = tc
	}
	out.GenerationConfig = g
	return json.Marshal(out)
}

// appendContent adds parts to the last content when it has the same role,
// since Gemini pairs a turn's calls with one turn of responses.
func appendContent(cs []geminiContent, role string, parts ...geminiPart) []geminiContent {
	if len(parts) == 0 {
		return cs
	}
	if n := len(cs); n > 0 && cs[n-1].Role == role {
		cs[n-1].Parts = append(cs[n-1].Parts, parts...)
		return cs
	}
	return append(cs, geminiContent{Role: role, Parts: parts})
}

func geminiToolConfigFor(choice json.RawMessage) (*geminiToolConfig, error) {
	if len(choice) == 0 || string(choice) == "null" {
		return nil, nil
	}
	tc := &geminiToolConfig{}
	tc.FunctionCallingConfig = &geminiFunctionCalling{}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		switch s {
		case "auto":
			tc.FunctionCallingConfig.Mode = "AUTO"
		case "required":
			tc.FunctionCallingConfig.Mode = "ANY"
		case "none":
			tc.FunctionCallingConfig.Mode = "NONE"
		default:
			return nil, BadRequest("tool_choice", "tool_choice must be auto, required, none or a function")
		}
		return tc, nil
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(choice, &named) != nil || named.Function.Name == "" {
		return nil, BadRequest("tool_choice", "tool_choice must be auto, required, none or {\"type\":\"function\",\"function\":{\"name\":…}}")
	}
	tc.FunctionCallingConfig.Mode = "ANY"
	tc.FunctionCallingConfig.AllowedFunctionNames = []string{named.Function.Name}
	return tc, nil
}

// chatText reads a message content that must be text: a string, null, or
// text parts.
func chatText(raw json.RawMessage, at string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []OpenAIContentPart
	if json.Unmarshal(raw, &parts) != nil {
		return "", BadRequest(at+".content", "content must be a string or a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatUserParts maps a user message's content onto Gemini parts: text,
// and images as inline data (data URIs) or file references (https).
func chatUserParts(raw json.RawMessage, at string) ([]geminiPart, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []geminiPart{{Text: s}}, nil
	}
	var parts []struct {
		Type       string           `json:"type"`
		Text       string           `json:"text"`
		ImageURL   *OpenAIImageURL  `json:"image_url"`
		InputAudio *geminiChatAudio `json:"input_audio"`
		File       *chatFile        `json:"file"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil, BadRequest(at+".content", "content must be a string or a list of parts")
	}
	var out []geminiPart
	for j, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, geminiPart{Text: p.Text})
		case "image_url":
			if p.ImageURL == nil {
				return nil, BadRequest(fmt.Sprintf("%s.content[%d].image_url", at, j), "image_url is required")
			}
			out = append(out, geminiDataPart(p.ImageURL.URL, "image/jpeg"))
		case "input_audio":
			if p.InputAudio != nil {
				out = append(out, geminiPart{InlineData: &geminiBlob{MimeType: "audio/" + p.InputAudio.Format, Data: p.InputAudio.Data}})
			}
		case "file":
			if p.File != nil && p.File.FileData != "" {
				out = append(out, geminiDataPart(p.File.FileData, "application/pdf"))
			}
		default:
			return nil, BadRequest(fmt.Sprintf("%s.content[%d].type", at, j), fmt.Sprintf("content part type %q cannot be sent to this model", p.Type))
		}
	}
	return out, nil
}

// geminiDataPart: a data URI becomes inline data, anything else a file
// reference Google fetches.
func geminiDataPart(url, fallbackType string) geminiPart {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			mt, _, _ := strings.Cut(meta, ";")
			return geminiPart{InlineData: &geminiBlob{MimeType: mt, Data: data}}
		}
	}
	return geminiPart{FileData: &geminiFileData{MimeType: fallbackType, FileURI: url}}
}
