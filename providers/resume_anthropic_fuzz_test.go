package providers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzAnthropicPrefill: whatever body the continuation starts from, the
// prefill is valid JSON ending in the assistant's text without trailing
// whitespace, or ErrNotResumable; never a panic.
func FuzzAnthropicPrefill(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), "Hello, wor")
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":"x"}]}`), "a ")
	f.Add([]byte(`{"thinking":{"type":"enabled"},"messages":[{"role":"user","content":"hi"}]}`), "a")
	f.Fuzz(func(t *testing.T, body []byte, text string) {
		out, err := AnthropicPrefill(body, text)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		var req struct{ Messages []struct{ Role string } }
		if json.Unmarshal(out, &req) != nil || len(req.Messages) == 0 {
			t.Fatalf("no messages: %s", out)
		}
		if strings.TrimSpace(text) != "" && req.Messages[len(req.Messages)-1].Role != "assistant" {
			t.Fatalf("no prefill: %s", out)
		}
	})
}

// FuzzAnthropicResume: a journal of any events reads as a prefix or
// ErrNotResumable, and a continuation of any events spliced onto a
// passthrough translator gives valid events or an error; never a panic.
func FuzzAnthropicResume(f *testing.F) {
	f.Add([]byte("content_block_start"), []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		[]byte("content_block_delta"), []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" x"}}`))
	f.Add([]byte("message_delta"), []byte(`{"type":"message_delta","usage":{"output_tokens":3,"input_tokens":2}}`),
		[]byte("content_block_stop"), []byte(`{"type":"content_block_stop","index":70000}`))
	f.Fuzz(func(t *testing.T, name1, data1, name2, data2 []byte) {
		var j AnthropicJournal
		j.Add(Event{Name: name1, Data: data1})
		j.Add(Event{Name: name2, Data: data2})
		p, err := j.Prefix()
		if err != nil {
			p = AnthropicPrefix{Text: "a ", Blocks: 1, Open: true}
		}
		tr := NewAnthropicResumed(NewAnthropicPassthroughStream(), p, Usage{InputTokens: 1, OutputTokens: 1})
		var out []byte
		for _, ev := range []Event{{Name: name1, Data: data1}, {Name: name2, Data: data2}} {
			before := len(out)
			next, err := tr.Translate(out, ev)
			if err != nil {
				continue
			}
			out = next
			for _, line := range bytes.Split(out[before:], []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !json.Valid(d) {
					t.Fatalf("invalid event data: %s", d)
				}
			}
		}
		_ = tr.Usage()
	})
}

// FuzzChatResume: any chunks journaled read as a continuation or
// ErrNotResumable; any prefill body gives valid JSON or an error; a
// continuation's chunk spliced onto a passthrough translator gives a
// valid chunk or an error; never a panic.
func FuzzChatResume(f *testing.F) {
	f.Add([]byte(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`),
		[]byte(`{"id":"d","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), "prefix")
	f.Fuzz(func(t *testing.T, first, next, body []byte, dialect string) {
		var j ChatJournal
		j.Add(Event{Data: first})
		res, err := j.Resume(NewOpenAIPassthroughStream(false), Usage{InputTokens: 1, OutputTokens: 1})
		if err != nil {
			return
		}
		if out, err := res.Prefill(body, dialect); err == nil && !json.Valid(out) {
			t.Fatalf("invalid prefill: %s", out)
		}
		out, err := res.Translator.Translate(nil, Event{Data: next})
		if err != nil {
			return
		}
		for _, line := range bytes.Split(out, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && string(d) != "[DONE]" && !json.Valid(d) {
				t.Fatalf("invalid chunk: %s", d)
			}
		}
	})
}
