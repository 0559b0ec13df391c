package providers

import (
	"strings"
	"testing"
)

// benchRequest is a realistic ~2 KB agent turn: a system prompt, a few
// turns, a tool call with its result and two tool definitions.
var benchRequest = []byte(`{"model":"local","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"temperature":0.3,"stop":["<|end|>"],
"messages":[
{"role":"system","content":"You are a careful coding assistant working in a Go repository. Prefer the standard library, explain briefly, and show complete functions when you change code. Never invent APIs; if unsure, say so."},
{"role":"user","content":"The tests in ./providers fail with a nil pointer dereference in the stream translator after the upstream closes the connection early. Can you look at the stack trace and tell me what is wrong?"},
{"role":"assistant","content":"Let me read the translator first.","tool_calls":[{"id":"call_8f2k","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"providers/ollama_stream.go\",\"start_line\":1,\"end_line\":120}"}}]},
{"role":"tool","tool_call_id":"call_8f2k","content":"package providers\n\nimport (\n\t\"bytes\"\n\t\"encoding/json\"\n)\n\n// ollamaToOpenAIStream turns NDJSON lines into SSE chunks.\ntype ollamaToOpenAIStream struct {\n\tmodel string\n\tstarted bool\n}\n\nfunc (s *ollamaToOpenAIStream) Finish(dst []byte) []byte {\n\treturn append(dst, s.head...)\n}\n"},
{"role":"assistant","content":"Finish appends the chunk head, which is only built when the first line arrives; an upstream that closes before sending anything leaves it empty, so the client gets a malformed chunk."},
{"role":"user","content":[{"type":"text","text":"Right. Please fix it so that Finish starts the stream itself when nothing was received, and add a test for an empty body."}]}
],
"tools":[
{"type":"function","function":{"name":"read_file","description":"Read part of a file in the repository","parameters":{"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer"},"end_line":{"type":"integer"}},"required":["path"]}}},
{"type":"function","function":{"name":"apply_patch","description":"Apply a unified diff to the repository","parameters":{"type":"object","properties":{"patch":{"type":"string"}},"required":["patch"]}}}
]}`)

func BenchmarkOpenAIToOllamaRequest(b *testing.B) {
	b.SetBytes(int64(len(benchRequest)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenAIToOllamaRequest(benchRequest, "qwen3:8b"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOllamaStreamLine is the per-token cost: one content line in,
// one SSE chunk out, into a reused buffer.
func BenchmarkOllamaStreamLine(b *testing.B) {
	line := []byte(`{"model":"qwen3:8b","created_at":"2025-07-07T20:22:19.184Z","message":{"role":"assistant","content":" the"},"done":false}`)
	tr := NewOllamaToOpenAIStream("local", true)
	dst, err := tr.Translate(nil, Event{Data: line})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = tr.Translate(dst[:0], Event{Data: line}); err != nil {
			b.Fatal(err)
		}
	}
	if !strings.Contains(string(dst), `"content":" the"`) {
		b.Fatalf("unexpected output %s", dst)
	}
}
