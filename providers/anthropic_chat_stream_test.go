package providers

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

type sseEvent struct{ name, data string }

// parseSSE is a deliberately separate, minimal SSE parser for checking
// translator output: events are separated by a blank line and carry at
// most one event: and one data: line.
func parseSSE(t *testing.T, s string) []sseEvent {
	t.Helper()
	if s != "" && !strings.HasSuffix(s, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", s)
	}
	var out []sseEvent
	for _, chunk := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		if chunk == "" {
			continue
		}
		var ev sseEvent
		for _, line := range strings.Split(chunk, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected line %q", line)
			}
		}
		out = append(out, ev)
	}
	return out
}

// runStream serves upstream over a loopback HTTP server, as a real
// upstream would, reads it with NewSSEReader and returns the translated
// client stream.
func runStream(t *testing.T, upstream string, tr StreamTranslator) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		// Write in uneven pieces so events straddle reads.
		for len(upstream) > 0 {
			n := min(37, len(upstream))
			_, _ = io.WriteString(w, upstream[:n])
			fl.Flush()
			upstream = upstream[n:]
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := NewSSEReader(resp.Body, bufio.NewReaderSize(nil, 64))
	var dst []byte
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst, err = tr.Translate(dst, ev)
		var inBand *APIError
		if errors.As(err, &inBand) {
			// As the gateway does: the upstream's error ends the stream,
			// rendered in the client's family.
			cf := FormatOpenAI
			if _, ok := tr.(*openAIToAnthropicStream); ok {
				cf = FormatAnthropic
			}
			return string(inBand.AppendStreamError(dst, cf))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return string(tr.Finish(dst))
}

const anthropicUpstream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"secret plan"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello \"world\"\n"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Os"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"lo\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01B","name":"get_time","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":52}}

event: message_stop
data: {"type":"message_stop"}

`

type chunkView struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments string  `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func decodeChunks(t *testing.T, evs []sseEvent) []chunkView {
	t.Helper()
	var out []chunkView
	for i, ev := range evs {
		if ev.name != "" {
			t.Errorf("event %d has a name %q; OpenAI streams have none", i, ev.name)
		}
		if ev.data == "[DONE]" {
			if i != len(evs)-1 {
				t.Errorf("[DONE] at %d of %d", i, len(evs))
			}
			continue
		}
		var c chunkView
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("chunk %d: %v: %s", i, err, ev.data)
		}
		out = append(out, c)
	}
	return out
}

func TestAnthropicToOpenAIStream(t *testing.T) {
	tr := NewAnthropicToOpenAIStream(true)
	evs := parseSSE(t, runStream(t, anthropicUpstream, tr))
	if evs[len(evs)-1].data != "[DONE]" {
		t.Fatalf("last event = %+v", evs[len(evs)-1])
	}
	chunks := decodeChunks(t, evs)
	for _, c := range chunks {
		if c.ID != "chatcmpl-1" || c.Object != "chat.completion.chunk" || c.Model != "claude-sonnet-4-5" {
			t.Fatalf("chunk envelope = %+v", c)
		}
	}
	// role, text, tool 0 start, 2 fragments, tool 1 start, 1 fragment, finish, usage
	if len(chunks) != 9 {
		t.Fatalf("got %d chunks: %+v", len(chunks), evs)
	}
	if d := chunks[0].Choices[0].Delta; d.Role == nil || *d.Role != "assistant" || d.Content == nil || *d.Content != "" {
		t.Errorf("role chunk = %+v", d)
	}
	if d := chunks[1].Choices[0].Delta; d.Content == nil || *d.Content != "Hello \"world\"\n" {
		t.Errorf("text chunk = %+v", d)
	}
	tc := chunks[2].Choices[0].Delta.ToolCalls
	if len(tc) != 1 || tc[0].Index != 0 || tc[0].ID != "toolu_01A" || tc[0].Type != "function" || *tc[0].Function.Name != "get_weather" {
		t.Errorf("tool start = %+v", tc)
	}
	args := chunks[3].Choices[0].Delta.ToolCalls[0].Function.Arguments + chunks[4].Choices[0].Delta.ToolCalls[0].Function.Arguments
	if args != `{"city": "Oslo"}` || chunks[4].Choices[0].Delta.ToolCalls[0].Index != 0 {
		t.Errorf("arguments = %q", args)
	}
	if tc := chunks[5].Choices[0].Delta.ToolCalls; tc[0].Index != 1 || tc[0].ID != "toolu_01B" {
		t.Errorf("second tool = %+v", tc)
	}
	if c := chunks[7].Choices[0]; c.FinishReason == nil || *c.FinishReason != "tool_calls" {
		t.Errorf("finish chunk = %+v", c)
	}
	for _, c := range chunks[:8] {
		if c.Usage != nil {
			t.Errorf("usage on a content chunk: %+v", c)
		}
	}
	u := chunks[8]
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != 135 || u.Usage.CompletionTokens != 52 || u.Usage.TotalTokens != 187 || u.Usage.PromptTokensDetails.CachedTokens != 100 {
		t.Errorf("usage chunk = %+v", u)
	}
	want := Usage{InputTokens: 25, CacheCreation5m: 10, CacheReadTokens: 100, OutputTokens: 52, Seen: true}
	if got := tr.Usage(); got != want {
		t.Errorf("Usage() = %+v, want %+v", got, want)
	}
}

func TestAnthropicToOpenAIStreamVariants(t *testing.T) {
	t.Run("no usage chunk unless asked", func(t *testing.T) {
		tr := NewAnthropicToOpenAIStream(false)
		chunks := decodeChunks(t, parseSSE(t, runStream(t, anthropicUpstream, tr)))
		if len(chunks) != 8 || chunks[7].Choices[0].FinishReason == nil {
			t.Fatalf("chunks = %+v", chunks)
		}
		if tr.Usage().OutputTokens != 52 {
			t.Errorf("usage still read: %+v", tr.Usage())
		}
	})
	t.Run("error event", func(t *testing.T) {
		up := strings.SplitAfter(anthropicUpstream, "\n\n")
		in := strings.Join(up[:7], "") + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
		evs := parseSSE(t, runStream(t, in, NewAnthropicToOpenAIStream(true)))
		last := evs[len(evs)-1]
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(last.data), &e); err != nil || e.Error.Message != "Overloaded" || e.Error.Type != "service_unavailable_error" {
			t.Fatalf("last = %+v", last)
		}
		if !strings.Contains(last.data, `"param":null,"code":null`) {
			t.Errorf("error lacks param/code keys: %s", last.data)
		}
		for _, ev := range evs {
			if ev.data == "[DONE]" {
				t.Error("[DONE] after an error")
			}
		}
	})
	t.Run("upstream cut before message_delta", func(t *testing.T) {
		up := strings.SplitAfter(anthropicUpstream, "\n\n")
		tr := NewAnthropicToOpenAIStream(true)
		chunks := decodeChunks(t, parseSSE(t, runStream(t, strings.Join(up[:8], ""), tr)))
		if n := len(chunks); n != 4 || *chunks[2].Choices[0].FinishReason != "stop" || chunks[3].Usage == nil || chunks[3].Usage.PromptTokens != 135 {
			t.Fatalf("chunks = %+v", chunks)
		}
	})
	t.Run("message_delta repeats input", func(t *testing.T) {
		in := strings.Replace(anthropicUpstream, `"usage":{"output_tokens":52}`,
			`"usage":{"output_tokens":60,"input_tokens":30,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":6}}`, 1)
		tr := NewAnthropicToOpenAIStream(false)
		runStream(t, in, tr)
		if want := (Usage{InputTokens: 30, CacheCreation5m: 4, CacheCreation1h: 6, OutputTokens: 60, Seen: true}); tr.Usage() != want {
			t.Errorf("Usage() = %+v, want %+v", tr.Usage(), want)
		}
	})
	t.Run("malformed event", func(t *testing.T) {
		tr := NewAnthropicToOpenAIStream(false)
		if _, err := tr.Translate(nil, Event{Name: []byte("content_block_delta"), Data: []byte("{")}); err == nil {
			t.Error("malformed event accepted")
		}
	})
}

const openAIUpstream = `data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}

: keep-alive comment

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a.1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Oslo\"}"}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":17,"total_tokens":137,"prompt_tokens_details":{"cached_tokens":100}}}

data: [DONE]

`

type anthropicEventView struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		ID      string            `json:"id"`
		Model   string            `json:"model"`
		Content []json.RawMessage `json:"content"`
		Usage   map[string]int64  `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage map[string]json.RawMessage `json:"usage"`
}

func decodeAnthropicEvents(t *testing.T, evs []sseEvent) []anthropicEventView {
	t.Helper()
	out := make([]anthropicEventView, len(evs))
	for i, ev := range evs {
		if err := json.Unmarshal([]byte(ev.data), &out[i]); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, ev.data)
		}
		if out[i].Type != ev.name {
			t.Errorf("event %d: name %q, data type %q", i, ev.name, out[i].Type)
		}
	}
	return out
}

func eventNames(evs []anthropicEventView) string {
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.Type
	}
	return strings.Join(names, ",")
}

func TestOpenAIToAnthropicStream(t *testing.T) {
	tr := NewOpenAIToAnthropicStream("team-sonnet")
	evs := decodeAnthropicEvents(t, parseSSE(t, runStream(t, openAIUpstream, tr)))
	want := "message_start,ping," +
		"content_block_start,content_block_delta,content_block_delta,content_block_stop," +
		"content_block_start,content_block_delta,content_block_delta,content_block_stop," +
		"content_block_start,content_block_delta,content_block_stop," +
		"message_delta,message_stop"
	if got := eventNames(evs); got != want {
		t.Fatalf("sequence:\n got %s\nwant %s", got, want)
	}
	if m := evs[0].Message; m.ID != "msg_chatcmpl-9" || m.Model != "team-sonnet" || m.Content == nil || len(m.Usage) == 0 {
		t.Errorf("message_start = %+v", m)
	}
	if b := evs[2]; b.Index != 0 || b.ContentBlock.Type != "text" {
		t.Errorf("text start = %+v", b)
	}
	if evs[3].Delta.Text+evs[4].Delta.Text != "Hello" || evs[3].Delta.Type != "text_delta" {
		t.Errorf("text deltas = %+v %+v", evs[3].Delta, evs[4].Delta)
	}
	if b := evs[6]; b.Index != 1 || b.ContentBlock.Type != "tool_use" || b.ContentBlock.ID != "call_a_1" || b.ContentBlock.Name != "get_weather" || string(b.ContentBlock.Input) != "{}" {
		t.Errorf("tool start = %+v", b)
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(evs[7].Delta.PartialJSON+evs[8].Delta.PartialJSON), &input); err != nil || input["city"] != "Oslo" || evs[7].Delta.Type != "input_json_delta" || evs[8].Index != 1 {
		t.Errorf("tool input = %+v", input)
	}
	if evs[9].Index != 1 || evs[10].Index != 2 || evs[10].ContentBlock.ID != "call_b" || evs[11].Delta.PartialJSON != "{}" || evs[12].Index != 2 {
		t.Errorf("second tool = %+v %+v %+v", evs[10], evs[11], evs[12])
	}
	md := evs[13]
	if md.Delta.StopReason == nil || *md.Delta.StopReason != "tool_use" {
		t.Errorf("message_delta = %+v", md.Delta)
	}
	for k, v := range map[string]string{"input_tokens": "20", "cache_read_input_tokens": "100", "output_tokens": "17", "cache_creation_input_tokens": "0"} {
		if string(md.Usage[k]) != v {
			t.Errorf("message_delta usage %s = %s, want %s", k, md.Usage[k], v)
		}
	}
	if want := (Usage{InputTokens: 20, CacheReadTokens: 100, OutputTokens: 17, Seen: true}); tr.Usage() != want {
		t.Errorf("Usage() = %+v, want %+v", tr.Usage(), want)
	}
}

func TestOpenAIToAnthropicStreamVariants(t *testing.T) {
	lines := strings.SplitAfter(openAIUpstream, "\n\n")
	t.Run("cut without finish or DONE", func(t *testing.T) {
		tr := NewOpenAIToAnthropicStream("")
		evs := decodeAnthropicEvents(t, parseSSE(t, runStream(t, strings.Join(lines[:6], ""), tr)))
		want := "message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_stop,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
		if got := eventNames(evs); got != want {
			t.Fatalf("sequence:\n got %s\nwant %s", got, want)
		}
		if evs[0].Message.Model != "gpt-4o" || *evs[9].Delta.StopReason != "tool_use" {
			t.Errorf("model %q stop %q", evs[0].Message.Model, *evs[9].Delta.StopReason)
		}
		if tr.Usage().Seen {
			t.Errorf("usage seen without a usage chunk: %+v", tr.Usage())
		}
	})
	t.Run("error mid-stream", func(t *testing.T) {
		in := strings.Join(lines[:2], "") + `data: {"error":{"message":"Rate limit reached","type":"rate_limit_exceeded","param":null,"code":null}}` + "\n\n"
		evs := parseSSE(t, runStream(t, in, NewOpenAIToAnthropicStream("")))
		last := evs[len(evs)-1]
		if last.name != "error" || !strings.Contains(last.data, `"type":"rate_limit_error"`) || !strings.Contains(last.data, "Rate limit reached") {
			t.Fatalf("last = %+v", last)
		}
		for _, ev := range evs {
			if ev.name == "message_stop" {
				t.Error("message_stop after an error")
			}
		}
	})
	t.Run("empty upstream", func(t *testing.T) {
		evs := decodeAnthropicEvents(t, parseSSE(t, runStream(t, "", NewOpenAIToAnthropicStream("m"))))
		if got := eventNames(evs); got != "message_start,ping,message_delta,message_stop" || *evs[2].Delta.StopReason != "end_turn" {
			t.Fatalf("sequence = %s", got)
		}
	})
	t.Run("whole tool call in one chunk, stop finish", func(t *testing.T) {
		in := `data: {"id":"c","model":"llama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x","index":0,"type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"c","model":"llama","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		evs := decodeAnthropicEvents(t, parseSSE(t, runStream(t, in, NewOpenAIToAnthropicStream(""))))
		want := "message_start,ping,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
		if got := eventNames(evs); got != want || evs[3].Delta.PartialJSON != `{"a":1}` || *evs[5].Delta.StopReason != "tool_use" {
			t.Fatalf("sequence = %s", got)
		}
	})
	t.Run("malformed chunk", func(t *testing.T) {
		if _, err := NewOpenAIToAnthropicStream("").Translate(nil, Event{Data: []byte("{")}); err == nil {
			t.Error("malformed chunk accepted")
		}
	})
}

// The named content_block_delta events take a copy-through fast path; the
// same events without names take the decoding path. Both must say the
// same thing.
func TestAnthropicFastPathMatchesDecode(t *testing.T) {
	extra := `event: content_block_start
data: {"type":"content_block_start","index":4,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"Caf\u00e9 \ud83d\ude00 \u2028 \"q\" \\ \/ tab\t end"}}

event: content_block_delta
data: {"delta":{"text":"","type":"text_delta"},"index":4,"type":"content_block_delta"}

event: content_block_delta
data: { "type" : "content_block_delta" , "index" : 3 , "delta" : { "type" : "input_json_delta" , "partial_json" : "{\"k\": \"\u00fc\\n\"}" } }

event: content_block_delta
data: {"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}

event: content_block_delta
data: {"type":"content_block_delta","index":99,"delta":{"type":"input_json_delta","partial_json":"x"}}

`
	in := strings.Replace(anthropicUpstream, "event: message_delta", strings.TrimSuffix(extra, "\n\n")+"\n\nevent: message_delta", 1)
	named := decodeChunks(t, parseSSE(t, runStream(t, in, NewAnthropicToOpenAIStream(true))))
	var unnamed strings.Builder
	for _, line := range strings.SplitAfter(in, "\n") {
		if !strings.HasPrefix(line, "event: ") {
			unnamed.WriteString(line)
		}
	}
	plain := decodeChunks(t, parseSSE(t, runStream(t, unnamed.String(), NewAnthropicToOpenAIStream(true))))
	if !reflect.DeepEqual(named, plain) {
		t.Fatalf("fast and decoding paths differ:\n%+v\n%+v", named, plain)
	}
	var texts []string
	for _, c := range named {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil {
			texts = append(texts, *c.Choices[0].Delta.Content)
		}
	}
	if want := "Caf\u00e9 \U0001F600 \u2028 \"q\" \\ / tab\t end"; len(texts) != 3 || texts[2] != want {
		t.Errorf("texts = %q", texts)
	}
}

func TestOpenAIFastPathEdges(t *testing.T) {
	in := `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}

data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"caf\u00e9 \"x\"\n","tool_calls":[]},"finish_reason":null}],"usage":null}

data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":null},"finish_reason":null}]}

data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"bye"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}

data: [DONE]

`
	tr := NewOpenAIToAnthropicStream("")
	evs := decodeAnthropicEvents(t, parseSSE(t, runStream(t, in, tr)))
	want := "message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := eventNames(evs); got != want {
		t.Fatalf("sequence:\n got %s\nwant %s", got, want)
	}
	if evs[3].Delta.Text != "café \"x\"\n" || evs[4].Delta.Text != "bye" || *evs[6].Delta.StopReason != "max_tokens" {
		t.Errorf("deltas %q %q stop %q", evs[3].Delta.Text, evs[4].Delta.Text, *evs[6].Delta.StopReason)
	}
	if u := tr.Usage(); u.InputTokens != 5 || u.OutputTokens != 2 || !u.Seen {
		t.Errorf("usage = %+v", u)
	}
}
