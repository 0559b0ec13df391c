package providers

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// A client-executed tool search (Codex's tool_search with "execution":
// "client") is a tool the client runs itself: it searches the tools it
// deferred (its MCP tools) and answers with their definitions, which the
// model may call from then on. For a translated backend it is an ordinary
// function: offered under its name with its parameters; its
// tool_search_call and tool_search_output items become a tool call and a
// tool message like a custom tool's; and the tools its outputs loaded
// are offered as functions on every later turn, as OpenAI's API does. A
// server-executed tool search runs on OpenAI's side and stays hosted.
//
// The wire shapes, as Codex writes them:
//
//	tool:   {"type":"tool_search","execution":"client","description":…,"parameters":{…}}
//	call:   {"type":"tool_search_call","call_id":…,"status":"completed","execution":"client","arguments":{"query":…,"limit":…}}
//	output: {"type":"tool_search_output","call_id":…,"status":"completed","execution":"client","tools":[function or namespace tools]}

// toolLoaded starts the line a chat model reads for each tool a
// client-side tool search loaded (Codex's tool_search, Claude Code's
// ToolSearch), in place of the definitions the client hands its API.
const toolLoaded = "Tool loaded: "

// toolSearchClient is the execution of a tool search the client runs.
const toolSearchClient = "client"

// toolSearchName is the function name a client tool search is offered
// under.
const toolSearchName = "tool_search"

// clientToolSearch reports whether tool is a tool search the client runs.
func clientToolSearch(tool *ResponsesTool) bool {
	return tool.Type == "tool_search" && tool.Execution == toolSearchClient
}

// loadedTools are the tools the client's tool searches loaded so far: the
// tools of every client tool_search_output in the effective input.
func (t *ResponsesTurn) loadedTools() []ResponsesTool {
	var out []ResponsesTool
	for i := range t.items {
		if it := &t.items[i]; it.Type == "tool_search_output" && it.Execution == toolSearchClient {
			out = append(out, it.Tools...)
		}
	}
	return out
}

// indexLoaded maps the chat names of the loaded tools back to them; a
// tool the client also lists in tools, or that two searches loaded, keeps
// its first entry.
func (t *ResponsesTurn) indexLoaded(loaded []ResponsesTool) {
	add := func(chatName string, ref toolRef) {
		if _, dup := t.tools[chatName]; !dup && ref.name != "" {
			t.tools[chatName] = ref
		}
	}
	for _, tool := range loaded {
		switch tool.Type {
		case "function", "":
			add(tool.Name, toolRef{kind: toolFunction, name: tool.Name})
		case "namespace":
			for _, sub := range tool.Tools {
				if sub.Type == "function" || sub.Type == "" {
					add(namespacedName(tool.Name, sub.Name), toolRef{kind: toolFunction, name: sub.Name, namespace: tool.Name})
				}
			}
		}
	}
}

// toolSearchCall is a client tool_search_call as the chat tool call the
// model made.
func toolSearchCall(it *responsesItem, param string) (OpenAIToolCall, error) {
	if it.CallID == "" {
		return OpenAIToolCall{}, responsesError(param+".call_id", "%s.call_id is required", param)
	}
	args, err := argumentsString(it.Arguments, param)
	if err != nil {
		return OpenAIToolCall{}, err
	}
	return OpenAIToolCall{ID: it.CallID, Type: "function", Function: OpenAIFunctionCall{Name: toolSearchName, Arguments: args}}, nil
}

// toolSearchResult is a client tool_search_output as the tool message
// that answers its call: a line naming each tool loaded, under the name
// the model calls it by (its definition is in the request's tools).
func toolSearchResult(it *responsesItem, param string) (chatMessage, error) {
	if it.CallID == "" {
		return chatMessage{}, responsesError(param+".call_id", "%s.call_id is required", param)
	}
	var b strings.Builder
	line := func(name string) {
		if name == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(toolLoaded)
		b.WriteString(name)
	}
	for _, tool := range it.Tools {
		if tool.Type == "namespace" {
			for _, sub := range tool.Tools {
				line(namespacedName(tool.Name, sub.Name))
			}
			continue
		}
		line(tool.Name)
	}
	if b.Len() == 0 {
		b.WriteString("No tools matched the search.")
	}
	return chatMessage{Role: "tool", ToolCallID: it.CallID, Content: b.String()}, nil
}

// appendToolSearchArguments writes a tool search call's arguments as the
// object Codex reads. Arguments a chat model wrote that are not a JSON
// object are taken as the query, the search's one required parameter.
func appendToolSearchArguments(dst []byte, args string) []byte {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return jsonfast.AppendCompactRaw(dst, raw)
	}
	dst = append(dst, `{"query":`...)
	dst = jsonfast.AppendQuoted(dst, args, false)
	return append(dst, '}')
}
