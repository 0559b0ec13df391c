package providers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// runOllamaStream feeds NDJSON text through NDJSONReader and the
// translator the way the gateway does, returning the SSE output and the
// error that stopped the stream, if any.
func runOllamaStream(t testing.TB, ndjson []byte, includeUsage bool) ([]byte, StreamTranslator, error) {
	t.Helper()
	r := NewNDJSONReader(bytes.NewReader(ndjson), bufio.NewReader(nil))
	tr := NewOllamaToOpenAIStream("local-model", includeUsage)
	var out []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return tr.Finish(out), tr, nil
		}
		if err != nil {
			return out, tr, err
		}
		if out, err = tr.Translate(out, ev); err != nil {
			return out, tr, err
		}
	}
}

// parseSSE re-reads OpenAI SSE output: the decoded chunks and whether the
// stream ended with [DONE] as its last event.
func parseOllamaSSE(t testing.TB, sse []byte) ([]testChunk, bool) {
	t.Helper()
	r := NewSSEReader(bytes.NewReader(sse), bufio.NewReader(nil))
	var chunks []testChunk
	done := false
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return chunks, done
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Name) != 0 {
			t.Fatalf("OpenAI stream has an event name %q", ev.Name)
		}
		if done {
			t.Fatalf("event after [DONE]: %s", ev.Data)
		}
		if string(ev.Data) == "[DONE]" {
			done = true
			continue
		}
		var c testChunk
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("chunk %s: %v", ev.Data, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("object %q", c.Object)
		}
		chunks = append(chunks, c)
	}
}

func TestOllamaStreamToolCalls(t *testing.T) {
	nd, err := os.ReadFile("testdata/ollama/stream_tools.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	for _, includeUsage := range []bool{true, false} {
		out, tr, err := runOllamaStream(t, nd, includeUsage)
		if err != nil {
			t.Fatal(err)
		}
		chunks, done := parseOllamaSSE(t, out)
		if !done {
			t.Fatal("no [DONE]")
		}
		first := chunks[0]
		if first.Choices[0].Delta.Role != "assistant" || first.Choices[0].Delta.Content == nil || *first.Choices[0].Delta.Content != "" {
			t.Errorf("first chunk is not the role chunk: %+v", first)
		}
		var content, reasoning strings.Builder
		var calls []OpenAIToolCall
		var finish []string
		var usage *OpenAIUsage
		for _, c := range chunks {
			if c.ID != first.ID || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != "local-model" || c.Created != 1751919739 {
				t.Errorf("chunk header differs: %+v", c)
			}
			if c.Usage != nil {
				usage = c.Usage
				if len(c.Choices) != 0 {
					t.Errorf("usage chunk with choices")
				}
				continue
			}
			ch := c.Choices[0]
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			reasoning.WriteString(ch.Delta.Reasoning)
			calls = append(calls, ch.Delta.ToolCalls...)
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
		}
		if content.String() != "Checking \"Oslo\"\n" || reasoning.String() != "The user wants weather." {
			t.Errorf("content %q reasoning %q", content.String(), reasoning.String())
		}
		if len(calls) != 2 {
			t.Fatalf("tool calls %+v", calls)
		}
		if *calls[0].Index != 0 || !strings.HasPrefix(calls[0].ID, "call_") || calls[0].Type != "function" ||
			calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Oslo","unit":"celsius"}` {
			t.Errorf("call 0 %+v", calls[0])
		}
		if *calls[1].Index != 1 || calls[1].ID != "call_k2x9" || calls[1].Function.Name != "get_time" || calls[1].Function.Arguments != "{}" {
			t.Errorf("call 1 %+v", calls[1])
		}
		if len(finish) != 1 || finish[0] != "tool_calls" {
			t.Errorf("finish reasons %v", finish)
		}
		last := chunks[len(chunks)-1]
		if includeUsage {
			if usage == nil || usage.PromptTokens != 26 || usage.CompletionTokens != 282 || usage.TotalTokens != 308 || last.Usage == nil {
				t.Errorf("usage chunk %+v, last %+v", usage, last)
			}
		} else if usage != nil {
			t.Errorf("usage chunk without include_usage")
		}
		if u := tr.Usage(); u != (Usage{InputTokens: 26, OutputTokens: 282, Seen: true}) {
			t.Errorf("Usage() %+v", u)
		}
	}
}

func TestOllamaStreamErrorLine(t *testing.T) {
	nd, err := os.ReadFile("testdata/ollama/stream_error.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	out, tr, err := runOllamaStream(t, nd, true)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway ||
		ae.Message != "an error was encountered while running the model: unexpected EOF" {
		t.Fatalf("err %v", err)
	}
	// What was translated before the error is intact; the caller appends
	// the error event and stops.
	out = ae.AppendStreamError(out, FormatOpenAI)
	r := NewSSEReader(bytes.NewReader(out), bufio.NewReader(nil))
	var datas []string
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		datas = append(datas, string(ev.Data))
	}
	if len(datas) != 4 || !strings.Contains(datas[2], `" upon"`) || !strings.HasPrefix(datas[3], `{"error":{"message":"an error was`) {
		t.Errorf("events %q", datas)
	}
	if tr.Usage().Seen {
		t.Errorf("usage seen without a done line")
	}
}

func TestOllamaStreamWithoutDone(t *testing.T) {
	tests := []struct {
		name, ndjson string
		content      string
		finish       string
	}{
		{"cut after content", `{"model":"m","created_at":"2025-07-07T20:22:19Z","message":{"role":"assistant","content":"Hal"},"done":false}` + "\n", "Hal", "stop"},
		{"cut after tool call", `{"model":"m","created_at":"2025-07-07T20:22:19Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]},"done":false}`, "", "tool_calls"},
		{"empty body", "", "", "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, tr, err := runOllamaStream(t, []byte(tt.ndjson), true)
			if err != nil {
				t.Fatal(err)
			}
			chunks, done := parseOllamaSSE(t, out)
			if !done {
				t.Fatal("no [DONE]")
			}
			if chunks[0].Choices[0].Delta.Role != "assistant" {
				t.Errorf("no role chunk first")
			}
			var content string
			var finish []string
			for _, c := range chunks {
				if len(c.Choices) == 0 {
					continue
				}
				if p := c.Choices[0].Delta.Content; p != nil {
					content += *p
				}
				if f := c.Choices[0].FinishReason; f != nil {
					finish = append(finish, *f)
				}
			}
			if content != tt.content || len(finish) != 1 || finish[0] != tt.finish {
				t.Errorf("content %q finish %v", content, finish)
			}
			if tr.Usage().Seen {
				t.Errorf("usage seen without a done line")
			}
		})
	}
}

func TestOllamaStreamIgnoresLinesAfterDone(t *testing.T) {
	nd := `{"message":{"role":"assistant","content":"a"},"done":false}
{"message":{"role":"assistant","content":""},"done":true,"done_reason":"length","eval_count":1}
{"message":{"role":"assistant","content":"late"},"done":false}
`
	out, _, err := runOllamaStream(t, []byte(nd), false)
	if err != nil {
		t.Fatal(err)
	}
	chunks, done := parseOllamaSSE(t, out)
	if !done || len(chunks) != 3 || *chunks[2].Choices[0].FinishReason != "length" {
		t.Errorf("output %s", out)
	}
}

func TestOllamaStreamInvalidLine(t *testing.T) {
	_, _, err := runOllamaStream(t, []byte("{\"message\":{\"content\":\"a\"}}\nnot json\n"), false)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway {
		t.Fatalf("err %v", err)
	}
}

// The chunk shape the stream tests decode; the translators write chunks
// by hand and need no type for them.

// testChunk is one streamed chunk.
type testChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint *string           `json:"system_fingerprint,omitempty"`
	Choices           []testChunkChoice `json:"choices"`
	Usage             *OpenAIUsage      `json:"usage"`
}

// testChunkChoice is a choice inside a chunk.
type testChunkChoice struct {
	Index        int       `json:"index"`
	Delta        testDelta `json:"delta"`
	Logprobs     any       `json:"logprobs,omitempty"`
	FinishReason *string   `json:"finish_reason"`
}

// testDelta is the incremental message of a chunk choice.
type testDelta struct {
	Role      string           `json:"role,omitempty"`
	Content   *string          `json:"content,omitempty"`
	Reasoning string           `json:"reasoning,omitempty"`
	ToolCalls []OpenAIToolCall `json:"tool_calls,omitempty"`
	Refusal   *string          `json:"refusal,omitempty"`
}

// endless is a stream that never ends an event: line, again and again.
type endless struct {
	line []byte
	off  int
	sent int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], e.line[e.off:])
		n += c
		e.off = (e.off + c) % len(e.line)
	}
	e.sent += n
	return n, nil
}

// TestReadersBoundOneEvent: data lines with no blank line between them
// (one event that never ends), one endless line, and one endless NDJSON
// object each stop at MaxEventBytes instead of growing without bound.
func TestReadersBoundOneEvent(t *testing.T) {
	for name, next := range map[string]func(*endless) error{
		"sse data lines": func(e *endless) error {
			_, err := NewSSEReader(e, bufio.NewReaderSize(nil, 4096)).Next()
			return err
		},
		"sse one line": func(e *endless) error {
			e.line = []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
			_, err := NewSSEReader(io.MultiReader(strings.NewReader("data: "), e), bufio.NewReaderSize(nil, 4096)).Next()
			return err
		},
		"ndjson": func(e *endless) error {
			e.line = []byte(`{"message":{"content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`)
			_, err := NewNDJSONReader(e, bufio.NewReaderSize(nil, 4096)).Next()
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := &endless{line: []byte("data: {\"choices\":[]}\n")}
			if err := next(e); !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err %v, want ErrEventTooLarge", err)
			}
			if e.sent > 2*MaxEventBytes {
				t.Fatalf("read %d bytes before stopping", e.sent)
			}
		})
	}
}
