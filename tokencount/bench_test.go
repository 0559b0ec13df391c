package tokencount

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// claudeCodeBody builds a count_tokens body shaped like Claude Code's: a long
// system prompt in text blocks, a dozen tools with JSON schemas, and a
// conversation of tool calls over source files, grown to about size bytes.
func claudeCodeBody(size int) []byte {
	type m = map[string]any
	para := "You are an interactive CLI tool that helps users with software engineering tasks. " +
		"Use the instructions below and the tools available to you to assist the user.\n\n" +
		"IMPORTANT: Refuse to write code that may be used maliciously; when working on files, " +
		"check what they are first. Keep your responses short, since they are displayed on a command line interface.\n"
	system := []m{{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
		{"type": "text", "text": strings.Repeat(para, 12), "cache_control": m{"type": "ephemeral"}}}
	var tools []m
	for i, name := range []string{"Task", "Bash", "Glob", "Grep", "LS", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch"} {
		tools = append(tools, m{
			"name":        name,
			"description": fmt.Sprintf("Tool %d. %s", i, strings.Repeat("Usage notes: the path must be absolute, not relative. ", 6)),
			"input_schema": m{"type": "object", "$schema": "http://json-schema.org/draft-07/schema#", "additionalProperties": false,
				"required": []string{"path"},
				"properties": m{
					"path":   m{"type": "string", "description": "The absolute path to the file"},
					"limit":  m{"type": "number", "description": "The number of lines to read"},
					"offset": m{"type": "number", "description": "The line number to start reading from"},
				}},
		})
	}
	code := "func (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != http.MethodPost {\n\t\thttp.Error(w, \"method not allowed\", 405)\n\t\treturn\n\t}\n\n\tvar req Request\n\tif err := json.NewDecoder(r.Body).Decode(&req); err != nil {\n\t\thttp.Error(w, err.Error(), 400)\n\t\treturn\n\t}\n}\n"
	msgs := []m{{"role": "user", "content": []m{{"type": "text", "text": "<system-reminder>As you answer, use the context below.</system-reminder>"},
		{"type": "text", "text": "Fix the error handling in server.go and add tests."}}}}
	for i := 0; ; i++ {
		b, _ := json.Marshal(m{"model": "claude-sonnet-4-5", "system": system, "tools": tools, "messages": msgs})
		if len(b) >= size {
			return b
		}
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			m{"role": "assistant", "content": []m{
				{"type": "text", "text": "Let me read the file."},
				{"type": "tool_use", "id": id, "name": "Read", "input": m{"path": fmt.Sprintf("/src/app/server%d.go", i)}}}},
			m{"role": "user", "content": []m{{"type": "tool_result", "tool_use_id": id, "content": strings.Repeat(code, 3)}}})
	}
}

func BenchmarkCountOpenAI(b *testing.B) {
	body := claudeCodeBody(76 << 10)
	c := New()
	n, _, err := c.CountOpenAI(body, "gpt-4o") // loads the vocabulary outside the timing
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.CountOpenAI(body, "gpt-4o"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "tokens")
	b.ReportMetric(float64(len(body)), "body-bytes")
}
