package tokencount

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // registers the decoders whose headers DecodeConfig reads
	_ "image/jpeg"
	_ "image/png"
	"strings"

	"github.com/modelgate/modelgate/providers"
)

// prompt is a count_tokens body reduced to what is counted, already in the
// shape an OpenAI-style backend would receive it: system first, tool results
// as their own "tool" messages, tool uses as calls.
type prompt struct {
	messages []chatMessage
	tools    []toolDef
}

type chatMessage struct {
	role       string
	text       string
	toolCalls  []toolCall
	toolCallID string
	// extra is the estimate for parts that are not text (images, PDFs).
	extra int
}

type toolCall struct {
	id, name  string
	arguments json.RawMessage
}

type toolDef struct {
	name, description string
	schema            json.RawMessage
	// countedJSON is what the local count encodes: the OpenAI function
	// definition for a client tool, the compacted JSON for a server tool.
	countedJSON []byte
}

// countRequest holds the counted fields; anything else (max_tokens,
// tool_choice, thinking, stream...) is accepted and ignored, since clients
// reuse Messages bodies.
type countRequest struct {
	Model    json.RawMessage `json:"model"`
	Messages json.RawMessage `json:"messages"`
	System   json.RawMessage `json:"system"`
	Tools    json.RawMessage `json:"tools"`
}

// block is a Messages content block as counting reads it: the
// translators' providers.AnthropicBlock, with the source left raw (a
// search_result's is a string, a document's may hold blocks) and the
// title and context of documents and search results, which count as text.
type block struct {
	providers.AnthropicBlock
	Source  json.RawMessage `json:"source"`
	Title   string          `json:"title"`
	Context string          `json:"context"`
}

// source is an image or document source; a "content" document source
// holds blocks.
type source struct {
	providers.AnthropicSource
	Content json.RawMessage `json:"content"`
}

func badRequest(param, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if param != "" {
		msg = param + ": " + msg
	}
	return providers.BadRequest(param, msg)
}

// parse validates a count_tokens body the way the Messages API would reject
// it, and reduces it to a prompt.
func parse(body []byte) (*prompt, error) {
	var req countRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("", "request body is not a valid JSON object: %v", err)
	}
	var model string
	if len(req.Model) == 0 || string(req.Model) == "null" {
		return nil, badRequest("model", "field required")
	}
	if json.Unmarshal(req.Model, &model) != nil || model == "" {
		return nil, badRequest("model", "must be a non-empty string")
	}
	if len(req.Messages) == 0 || string(req.Messages) == "null" {
		return nil, badRequest("messages", "field required")
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(req.Messages, &msgs) != nil {
		return nil, badRequest("messages", "must be an array of {role, content} objects")
	}
	if len(msgs) == 0 {
		return nil, badRequest("messages", "at least one message is required")
	}

	p := &prompt{}
	if len(req.System) > 0 && string(req.System) != "null" {
		m := chatMessage{role: "system"}
		if err := addContent(&m, nil, req.System, "system", false); err != nil {
			return nil, err
		}
		p.messages = append(p.messages, m)
	}
	for i, raw := range msgs {
		param := fmt.Sprintf("messages.%d", i)
		switch raw.Role {
		case "user", "assistant", "system":
		case "":
			return nil, badRequest(param+".role", "field required")
		default:
			return nil, badRequest(param+".role", "must be \"user\" or \"assistant\", not %q", raw.Role)
		}
		if len(raw.Content) == 0 || string(raw.Content) == "null" {
			return nil, badRequest(param+".content", "field required")
		}
		// Thinking of earlier turns is stripped by the API before counting;
		// only a final (prefilled) assistant turn keeps it.
		keepThinking := i == len(msgs)-1 && raw.Role == "assistant"
		m := chatMessage{role: raw.Role}
		var results []chatMessage
		if err := addContent(&m, &results, raw.Content, param+".content", keepThinking); err != nil {
			return nil, err
		}
		p.messages = append(p.messages, results...)
		if m.text != "" || m.extra > 0 || len(m.toolCalls) > 0 || len(results) == 0 {
			p.messages = append(p.messages, m)
		}
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		tools, err := parseTools(req.Tools)
		if err != nil {
			return nil, err
		}
		p.tools = tools
	}
	return p, nil
}

// addContent adds a string or an array of blocks to m. Tool results become
// separate messages in *results; where results is nil (system, nested tool
// result content) a tool_result block is an error.
func addContent(m *chatMessage, results *[]chatMessage, raw json.RawMessage, param string, keepThinking bool) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		appendText(m, s)
		return nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return badRequest(param, "must be a string or an array of content blocks")
	}
	for j, rawBlock := range blocks {
		bp := fmt.Sprintf("%s.%d", param, j)
		var b block
		if json.Unmarshal(rawBlock, &b) != nil {
			return badRequest(bp, "must be a content block object")
		}
		switch b.Type {
		case "":
			return badRequest(bp+".type", "field required")
		case "text":
			appendText(m, b.Text)
		case "image":
			m.extra += imageTokens(b.Source)
		case "document":
			appendText(m, b.Title)
			appendText(m, b.Context)
			if err := addDocument(m, b.Source, bp+".source"); err != nil {
				return err
			}
		case "search_result":
			appendText(m, b.Title)
			var src string
			if json.Unmarshal(b.Source, &src) == nil {
				appendText(m, src)
			}
			if len(b.Content) > 0 {
				if err := addContent(m, nil, b.Content, bp+".content", false); err != nil {
					return err
				}
			}
		case "tool_use":
			if b.Name == "" {
				return badRequest(bp+".name", "field required")
			}
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			var buf bytes.Buffer
			if json.Compact(&buf, args) == nil {
				args = buf.Bytes()
			}
			m.toolCalls = append(m.toolCalls, toolCall{id: b.ID, name: b.Name, arguments: args})
		case "tool_result":
			if results == nil {
				return badRequest(bp+".type", "tool_result is not allowed here")
			}
			r := chatMessage{role: "tool", toolCallID: b.ToolUseID}
			if len(b.Content) > 0 && string(b.Content) != "null" {
				if err := addContent(&r, nil, b.Content, bp+".content", false); err != nil {
					return err
				}
			}
			*results = append(*results, r)
		case "thinking":
			if keepThinking {
				appendText(m, b.Thinking)
			}
		case "redacted_thinking":
			if keepThinking {
				appendText(m, b.Data)
			}
		default:
			// Server tool uses and results, container uploads and blocks
			// newer than this code: their JSON is the best proxy at hand.
			var buf bytes.Buffer
			if json.Compact(&buf, rawBlock) == nil {
				appendText(m, buf.String())
			}
		}
	}
	return nil
}

// appendText joins text parts with a newline, as translated requests carry
// them.
func appendText(m *chatMessage, s string) {
	if s == "" {
		return
	}
	if m.text != "" {
		m.text += "\n"
	}
	m.text += s
}

func parseTools(raw json.RawMessage) ([]toolDef, error) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, badRequest("tools", "must be an array of tool definitions")
	}
	tools := make([]toolDef, 0, len(list))
	for i, rawTool := range list {
		param := fmt.Sprintf("tools.%d", i)
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if json.Unmarshal(rawTool, &t) != nil {
			return nil, badRequest(param, "must be a tool definition object")
		}
		if t.Name == "" {
			return nil, badRequest(param+".name", "field required")
		}
		d := toolDef{name: t.Name, description: t.Description}
		if (t.Type == "" || t.Type == "custom") && len(t.InputSchema) > 0 {
			var schema bytes.Buffer
			if json.Compact(&schema, t.InputSchema) != nil {
				return nil, badRequest(param+".input_schema", "must be a JSON schema object")
			}
			d.schema = schema.Bytes()
			fn, err := json.Marshal(providers.OpenAITool{Type: "function", Function: providers.OpenAIFunction{
				Name: t.Name, Description: t.Description, Parameters: d.schema}})
			if err != nil {
				return nil, badRequest(param, "cannot be encoded: %v", err)
			}
			d.countedJSON = fn
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, rawTool) != nil {
				return nil, badRequest(param, "must be a tool definition object")
			}
			d.countedJSON = buf.Bytes()
		}
		tools = append(tools, d)
	}
	return tools, nil
}

// unknownImageTokens is the high-detail cost of a 1024×1024 image (four
// 512-pixel tiles after scaling to 768), used when the size is unknown.
const unknownImageTokens = 85 + 170*4

// imageTokens applies OpenAI's high-detail formula: fit in 2048×2048, scale
// the short side down to 768, then 85 tokens plus 170 per 512-pixel tile. The
// size comes from the image header (PNG, JPEG, GIF); URLs and other formats
// get unknownImageTokens.
func imageTokens(rawSource json.RawMessage) int {
	var src source
	if json.Unmarshal(rawSource, &src) != nil || src.Type != "base64" {
		return unknownImageTokens
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(src.Data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return unknownImageTokens
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if w > 2048 || h > 2048 {
		s := 2048 / max(w, h)
		w, h = w*s, h*s
	}
	if short := min(w, h); short > 768 {
		s := 768 / short
		w, h = w*s, h*s
	}
	tiles := ceilDiv(int(w+0.5), 512) * ceilDiv(int(h+0.5), 512)
	return 85 + 170*tiles
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// pdfPageTokens is the low end of Anthropic's documented 1,500–3,000 tokens
// per page of text-only PDF.
const pdfPageTokens = 1500

func addDocument(m *chatMessage, rawSource json.RawMessage, param string) error {
	var src source
	if json.Unmarshal(rawSource, &src) != nil {
		return badRequest(param, "must be a document source object")
	}
	switch src.Type {
	case "text":
		appendText(m, src.Data)
	case "content":
		return addContent(m, nil, src.Content, param+".content", false)
	case "base64":
		data, err := base64.StdEncoding.DecodeString(src.Data)
		if err != nil {
			return badRequest(param+".data", "is not valid base64")
		}
		m.extra += pdfPageTokens * pdfPages(data)
	default:
		m.extra += pdfPageTokens
	}
	return nil
}

// pdfPages counts page objects ("/Type /Page", not "/Pages"), at least one.
// Pages inside compressed object streams are invisible to this scan, hence
// the floor.
func pdfPages(data []byte) int {
	n := 0
	for _, marker := range [][]byte{[]byte("/Type /Page"), []byte("/Type/Page")} {
		rest := data
		for {
			i := bytes.Index(rest, marker)
			if i < 0 {
				break
			}
			rest = rest[i+len(marker):]
			if len(rest) == 0 || rest[0] != 's' {
				n++
			}
		}
	}
	return max(n, 1)
}
