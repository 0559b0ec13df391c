package providers

import (
	"encoding/json"
	"strconv"
)

// A Responses request's tools and tool_choice, written as chat
// completions functions for the hub (docs/wire-formats.md §7).

// customToolParameters is how a freeform tool is offered to a chat model:
// one string argument that carries the whole input.
var customToolParameters = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The whole input for the tool, as plain text."}},"required":["input"],"additionalProperties":false}`)

// chatTools writes the tools as chat functions and maps tool_choice.
func (t *ResponsesTurn) chatTools() ([]OpenAITool, json.RawMessage, error) {
	var tools []OpenAITool
	// offered is kept only once a tool search loaded tools: one loaded
	// again, or that the client lists too, is offered once.
	var offered map[string]bool
	offer := func(f OpenAIFunction) {
		if offered != nil {
			if offered[f.Name] {
				return
			}
			offered[f.Name] = true
		}
		tools = append(tools, OpenAITool{Type: "function", Function: f})
	}
	var fn func(tool ResponsesTool, namespace string)
	fn = func(tool ResponsesTool, namespace string) {
		switch tool.Type {
		case "function", "":
			offer(OpenAIFunction{Name: chatName(tool.Name, namespace), Description: tool.Description,
				Parameters: objectSchema(tool.Parameters), Strict: tool.Strict})
		case "tool_search":
			if clientToolSearch(&tool) {
				offer(OpenAIFunction{Name: toolSearchName, Description: tool.Description, Parameters: objectSchema(tool.Parameters)})
			}
		case "custom":
			offer(OpenAIFunction{Name: chatName(tool.Name, namespace), Description: customToolDescription(tool),
				Parameters: customToolParameters})
		case "namespace":
			for _, sub := range tool.Tools {
				fn(sub, tool.Name)
			}
		}
	}
	for _, tool := range t.Req.Tools {
		fn(tool, "")
	}
	if loaded := t.loadedTools(); len(loaded) > 0 {
		t.indexLoaded(loaded)
		offered = make(map[string]bool, len(tools)+len(loaded))
		for _, tool := range tools {
			offered[tool.Function.Name] = true
		}
		for _, tool := range loaded {
			fn(tool, "")
		}
	}
	choice, keep, err := t.chatToolChoice()
	if err != nil {
		return nil, nil, err
	}
	if keep != nil {
		kept := tools[:0]
		for _, tool := range tools {
			if keep[tool.Function.Name] {
				kept = append(kept, tool)
			}
		}
		tools = kept
	}
	if len(tools) == 0 {
		// With every tool hosted and left out, a forced choice has nothing
		// to force.
		return nil, nil, nil
	}
	return tools, choice, nil
}

// objectSchema gives a function without parameters the empty object
// schema chat upstreams require.
func objectSchema(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return p
}

// customToolDescription carries a freeform tool's grammar in its
// description: a chat model cannot be constrained by it, only told.
func customToolDescription(tool ResponsesTool) string {
	var f struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
	}
	_ = json.Unmarshal(tool.Format, &f)
	d := tool.Description
	if f.Type == "grammar" && f.Definition != "" {
		d += "\n\nThe input must follow this " + f.Syntax + " grammar:\n" + f.Definition
	}
	return d
}

// chatToolChoice maps tool_choice; keep, when not nil, is the allowed_tools
// subset of function names to offer.
func (t *ResponsesTurn) chatToolChoice() (json.RawMessage, map[string]bool, error) {
	raw := t.Req.ToolChoice
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto", "none", "required":
			return raw, nil, nil
		}
		return nil, nil, responsesError("tool_choice", "tool_choice must be auto, none, required or an object, not %q", s)
	}
	var c struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Mode      string `json:"mode"`
		Tools     []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, nil, fieldError("tool_choice", err)
	}
	switch c.Type {
	case "function", "custom":
		name := chatName(c.Name, c.Namespace)
		if _, ok := t.tools[name]; !ok {
			return nil, nil, responsesError("tool_choice.name", "tool_choice names %q, which is not in tools", c.Name)
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name}})
		return b, nil, nil
	case "allowed_tools":
		keep := make(map[string]bool, len(c.Tools))
		for _, tool := range c.Tools {
			keep[chatName(tool.Name, tool.Namespace)] = true
		}
		mode := c.Mode
		if mode != "required" {
			mode = "auto"
		}
		return json.RawMessage(strconv.Quote(mode)), keep, nil
	}
	return nil, nil, responsesError("tool_choice.type", "tool_choice forces a %q tool, which this model's backend cannot run", c.Type)
}
