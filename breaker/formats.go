package breaker

import (
	"bytes"
	"encoding/json"

	"github.com/cespare/xxhash/v2"
)

// The readers below take one history entry of each format to the calls,
// text and results the fingerprint hashes. An entry they cannot read is
// an entry without any.

// readMessage reads an Anthropic Messages message: an assistant's text and
// tool_use blocks, a user's tool_result blocks.
func readMessage(raw []byte) entry {
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return entry{}
	}
	e := entry{produced: m.Role == "assistant"}
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || c[0] != '[' {
		if e.produced {
			e.text = textOf(c)
		}
		return e
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(c, &blocks) != nil {
		return e
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if e.produced {
				e.text += b.Text
			}
		case "tool_use", "server_tool_use":
			e.calls = append(e.calls, call{id: b.ID, name: b.Name, args: entryHash(b.Input)})
		case "tool_result":
			text := textOf(b.Content)
			r := result{id: b.ToolUseID, content: contentOf(text, b.Content), failed: b.IsError}
			if r.failed && !quietNo(text) {
				r.class = classOf(text)
			} else {
				r.failed = false
			}
			e.results = append(e.results, r)
		}
	}
	return e
}

// readChat reads an OpenAI chat message: an assistant's content and
// tool_calls, a tool message's content.
func readChat(raw []byte) entry {
	var m struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return entry{}
	}
	switch m.Role {
	case "assistant":
		e := entry{produced: true, text: textOf(m.Content)}
		for _, c := range m.ToolCalls {
			e.calls = append(e.calls, call{id: c.ID, name: c.Function.Name, args: entryHash([]byte(c.Function.Arguments))})
		}
		return e
	case "tool", "function":
		text := textOf(m.Content)
		r := result{id: m.ToolCallID, content: contentOf(text, m.Content), failed: failedText(text)}
		if r.failed {
			r.class = classOf(text)
		}
		return entry{results: []result{r}}
	}
	return entry{}
}

// readItem reads an OpenAI Responses input item: the model's messages,
// function, custom-tool and shell calls, and their outputs.
func readItem(raw []byte) entry {
	var it struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		Action    json.RawMessage `json:"action"`
		Output    json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &it) != nil {
		return entry{}
	}
	switch it.Type {
	case "function_call":
		return entry{produced: true, calls: []call{{id: it.CallID, name: it.Name, args: entryHash([]byte(it.Arguments))}}}
	case "custom_tool_call":
		return entry{produced: true, calls: []call{{id: it.CallID, name: it.Name, args: xxhash.Sum64String(it.Input)}}}
	case "local_shell_call":
		return entry{produced: true, calls: []call{{id: it.CallID, name: "local_shell", args: entryHash(it.Action)}}}
	case "reasoning":
		return entry{produced: true}
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		text := textOf(it.Output)
		r := result{id: it.CallID, content: contentOf(text, it.Output), failed: failedText(text)}
		if r.failed {
			r.class = classOf(text)
		}
		return entry{results: []result{r}}
	case "message", "":
		if it.Role == "assistant" {
			return entry{produced: true, text: textOf(it.Content)}
		}
	}
	return entry{}
}

// readContent reads a Gemini content: the model's text and functionCall
// parts, a user's functionResponse parts (failed when the response holds
// an error, as Gemini CLI writes it).
func readContent(raw []byte) entry {
	var c struct {
		Role  string `json:"role"`
		Parts []struct {
			Text         string `json:"text"`
			Thought      bool   `json:"thought"`
			FunctionCall *struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return entry{}
	}
	e := entry{produced: c.Role == "model"}
	for _, p := range c.Parts {
		switch {
		case p.FunctionCall != nil:
			e.calls = append(e.calls, call{id: p.FunctionCall.ID, name: p.FunctionCall.Name, args: entryHash(p.FunctionCall.Args)})
		case p.FunctionResponse != nil:
			var resp struct {
				Error  json.RawMessage `json:"error"`
				Output json.RawMessage `json:"output"`
			}
			_ = json.Unmarshal(p.FunctionResponse.Response, &resp)
			r := result{id: p.FunctionResponse.ID, name: p.FunctionResponse.Name, content: p.FunctionResponse.Response}
			if len(resp.Error) > 0 && string(resp.Error) != "null" {
				text := textOf(resp.Error)
				r.failed, r.class, r.content = true, classOf(text), contentOf(text, resp.Error)
			} else if text := textOf(resp.Output); failedText(text) {
				r.failed, r.class, r.content = true, classOf(text), []byte(text)
			}
			e.results = append(e.results, r)
		case e.produced && !p.Thought:
			e.text += p.Text
		}
	}
	return e
}

// contentOf is what a result's hash covers: its text, lines and all,
// where it has one, else its JSON.
func contentOf(text string, raw []byte) []byte {
	if text != "" {
		return []byte(text)
	}
	return raw
}
