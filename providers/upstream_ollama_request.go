package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// OpenAIToOllamaRequest translates an OpenAI chat completions request body
// into an Ollama /api/chat body for upstreamModel. Client mistakes come back
// as *APIError 400 naming the parameter.
func OpenAIToOllamaRequest(body []byte, upstreamModel string) ([]byte, error) {
	out, err := buildOllamaRequest(body, upstreamModel)
	if err != nil {
		return nil, err
	}
	// The output is about the size of the input; one allocation holds it.
	return appendOllamaRequest(make([]byte, 0, len(body)+256), &out), nil
}

// buildOllamaRequest decodes the body and maps it to the output struct, which OpenAIToOllamaRequest
// encodes by hand, byte for byte as json.Marshal would (FuzzOpenAIRequestDifferential
// and FuzzResponseDifferential check that).
func buildOllamaRequest(body []byte, upstreamModel string) (OllamaRequest, error) {
	var in OpenAIRequest
	if err := decodeOpenAIRequest(body, &in); err != nil {
		return OllamaRequest{}, err
	}
	if in.N != nil && *in.N != 1 {
		return OllamaRequest{}, BadRequest("n", "n: only 1 is supported by this model")
	}
	out := OllamaRequest{
		Model:    upstreamModel,
		Messages: make([]OllamaMessage, 0, len(in.Messages)),
		Stream:   in.Stream,
	}
	var err error
	if out.Messages, err = ollamaMessages(out.Messages, in.Messages); err != nil {
		return OllamaRequest{}, err
	}
	if out.Tools, err = ollamaTools(in.Tools, in.ToolChoice); err != nil {
		return OllamaRequest{}, err
	}
	if out.Options, err = ollamaOptions(&in); err != nil {
		return OllamaRequest{}, err
	}
	if out.Format, err = ollamaFormat(in.ResponseFormat); err != nil {
		return OllamaRequest{}, err
	}
	if out.Think, err = ollamaThink(in.ReasoningEffort); err != nil {
		return OllamaRequest{}, err
	}
	return out, nil
}

// decodeOpenAIRequest parses a chat completions body, turning decoder
// errors into 400s that name the field rather than Go types.
func decodeOpenAIRequest(body []byte, in *OpenAIRequest) *APIError {
	if err := unmarshalOpenAIRequest(body, in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return BadRequest(te.Field, te.Field+": unexpected JSON "+te.Value)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return BadRequest("", "invalid JSON body: "+se.Error())
		}
		return BadRequest("", "invalid JSON body")
	}
	if len(in.Messages) == 0 {
		return BadRequest("messages", "messages: must be a non-empty array")
	}
	return nil
}

func ollamaMessages(dst []OllamaMessage, msgs []OpenAIMessage) ([]OllamaMessage, error) {
	// Ollama wants the function name on a tool result, OpenAI only sends
	// the call id, so remember the names the assistant used.
	type call struct{ id, name string }
	var calls []call
	for i := range msgs {
		m := &msgs[i]
		p := "messages[" + strconv.Itoa(i) + "]"
		var om OllamaMessage
		switch m.Role {
		case "system", "developer":
			om.Role = "system"
		case "user", "assistant", "tool":
			om.Role = m.Role
		case "function":
			// Deprecated OpenAI role: a function result named by Name.
			om.Role = "tool"
			om.ToolName = m.Name
		default:
			return nil, BadRequest(p+".role", p+".role: unsupported role "+strconv.Quote(m.Role))
		}
		text, images, err := ollamaContent(m.Content, p+".content")
		if err != nil {
			return nil, err
		}
		om.Content, om.Images = text, images
		if m.Role == "assistant" {
			om.Thinking = m.Reasoning
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				args, err := ollamaArguments(tc.Function.Arguments)
				if err != nil {
					q := p + ".tool_calls[" + strconv.Itoa(j) + "].function.arguments"
					return nil, BadRequest(q, q+": "+err.Error())
				}
				om.ToolCalls = append(om.ToolCalls, OllamaToolCall{
					ID:       tc.ID,
					Function: OllamaFunctionCall{Name: tc.Function.Name, Arguments: args},
				})
				if tc.ID != "" {
					calls = append(calls, call{tc.ID, tc.Function.Name})
				}
			}
		}
		if m.Role == "tool" {
			om.ToolCallID = m.ToolCallID
			om.ToolName = m.Name
			for k := len(calls) - 1; k >= 0; k-- {
				if calls[k].id == m.ToolCallID {
					om.ToolName = calls[k].name
					break
				}
			}
		}
		dst = append(dst, om)
	}
	return dst, nil
}

// ollamaContent flattens OpenAI content (null, a string or parts) into
// Ollama's single content string plus base64 images. Text parts are
// joined with newlines, the separation Ollama's own OpenAI layer gives
// them by turning each part into its own message.
func ollamaContent(raw json.RawMessage, param string) (string, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		// raw is a value of a decoded document, so a valid string.
		return jsonfast.Unquote(raw), nil, nil
	}
	parts, ok := readContentParts(raw)
	if !ok {
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, BadRequest(param, param+": must be a string or an array of content parts")
		}
	}
	var text strings.Builder
	var images []string
	for j := range parts {
		pp := param + "[" + strconv.Itoa(j) + "]"
		switch parts[j].Type {
		case "text":
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(parts[j].Text)
		case "image_url":
			if parts[j].ImageURL == nil {
				return "", nil, BadRequest(pp+".image_url", pp+".image_url: missing")
			}
			data, err := dataURIBase64(parts[j].ImageURL.URL)
			if err != nil {
				return "", nil, BadRequest(pp+".image_url.url", pp+".image_url.url: "+err.Error())
			}
			images = append(images, data)
		default:
			return "", nil, BadRequest(pp+".type", pp+".type: unsupported content part type "+strconv.Quote(parts[j].Type))
		}
	}
	return text.String(), images, nil
}

// dataURIBase64 returns the payload of a base64 data URI. Remote URLs are
// refused because Ollama has no way to fetch them.
func dataURIBase64(u string) (string, error) {
	if !strings.HasPrefix(u, "data:") {
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			return "", constError("image URLs are not supported by Ollama; send the image as a base64 data URI")
		}
		return "", constError("must be a base64 data URI")
	}
	meta, data, ok := strings.Cut(u[len("data:"):], ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return "", constError("must be a base64 data URI")
	}
	if data == "" {
		return "", constError("empty image data")
	}
	return data, nil
}

// ollamaArguments turns OpenAI's JSON-encoded arguments string into the
// object Ollama expects. An empty string is what some clients send for a
// call without parameters.
func ollamaArguments(s string) (json.RawMessage, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' || !json.Valid([]byte(t)) {
		return nil, constError("must be a JSON object encoded as a string")
	}
	return json.RawMessage(t), nil
}

func ollamaTools(tools []OpenAITool, choice json.RawMessage) ([]OllamaTool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	// Ollama has no tool_choice; "none" is honoured by not offering the
	// tools, "required" and named choices cannot be enforced and are
	// left to the model.
	if string(bytes.TrimSpace(choice)) == `"none"` {
		return nil, nil
	}
	out := make([]OllamaTool, len(tools))
	for i := range tools {
		t := &tools[i]
		if t.Type != "" && t.Type != "function" {
			p := "tools[" + strconv.Itoa(i) + "].type"
			return nil, BadRequest(p, p+": unsupported tool type "+strconv.Quote(t.Type))
		}
		if t.Function.Name == "" {
			p := "tools[" + strconv.Itoa(i) + "].function.name"
			return nil, BadRequest(p, p+": required")
		}
		out[i] = OllamaTool{Type: "function", Function: t.Function}
		out[i].Function.Strict = nil
	}
	return out, nil
}

func ollamaOptions(in *OpenAIRequest) (*OllamaOptions, error) {
	o := OllamaOptions{
		NumPredict:       in.MaxCompletionTokens,
		Temperature:      in.Temperature,
		TopP:             in.TopP,
		Seed:             in.Seed,
		FrequencyPenalty: in.FrequencyPenalty,
		PresencePenalty:  in.PresencePenalty,
	}
	if o.NumPredict == nil {
		o.NumPredict = in.MaxTokens
	}
	stop, err := decodeStop(in.Stop, notEmpty)
	if err != nil {
		return nil, err
	}
	o.Stop = stop
	if o.NumPredict == nil && o.Temperature == nil && o.TopP == nil && o.Seed == nil &&
		o.FrequencyPenalty == nil && o.PresencePenalty == nil && len(o.Stop) == 0 {
		return nil, nil
	}
	return &o, nil
}

func ollamaFormat(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, BadRequest("response_format", "response_format: must be an object with a type")
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`"json"`), nil
	case "json_schema":
		if rf.JSONSchema == nil || len(bytes.TrimSpace(rf.JSONSchema.Schema)) == 0 ||
			bytes.TrimSpace(rf.JSONSchema.Schema)[0] != '{' {
			return nil, BadRequest("response_format.json_schema.schema", "response_format.json_schema.schema: a JSON schema object is required")
		}
		return rf.JSONSchema.Schema, nil
	}
	return nil, BadRequest("response_format.type", "response_format.type: unsupported "+strconv.Quote(rf.Type))
}

// ollamaThink maps reasoning_effort onto Ollama's think. Ollama knows no
// "minimal", so it gets the nearest level.
func ollamaThink(effort string) (json.RawMessage, error) {
	switch effort {
	case "":
		return nil, nil
	case "none":
		return json.RawMessage("false"), nil
	case "minimal":
		return json.RawMessage(`"low"`), nil
	case "low", "medium", "high", "max":
		return json.RawMessage(`"` + effort + `"`), nil
	}
	return nil, BadRequest("reasoning_effort", "reasoning_effort: unsupported value "+strconv.Quote(effort))
}
