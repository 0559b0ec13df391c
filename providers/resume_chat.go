package providers

// Continuing a chat-completions upstream stream cut after the client got
// text, on a backend that continues a trailing assistant message (its
// models-file assistant_prefill says how it is asked to).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// The assistant_prefill dialects: how a chat backend is asked to continue
// the last assistant message rather than answer after it.
const (
	// PrefillContinueFinalMessage is vLLM's and SGLang's:
	// continue_final_message true, add_generation_prompt false.
	PrefillContinueFinalMessage = "continue_final_message"
	// PrefillPrefix is DeepSeek's and Mistral's: "prefix": true on the
	// message.
	PrefillPrefix = "prefix"
	// PrefillTrailing is a backend that continues a trailing assistant
	// message as it is (llama.cpp's server).
	PrefillTrailing = "trailing"
)

// ChatJournal keeps the chunks of a chat-completions upstream stream.
type ChatJournal struct {
	buf []byte
	// full: the stream passed MaxJournal and is not continued.
	full bool
}

// Add notes one upstream chunk.
func (j *ChatJournal) Add(ev Event) {
	if j == nil || j.full {
		return
	}
	if journalFull(j.buf, len(ev.Data)+16) {
		j.full, j.buf = true, nil
		return
	}
	j.buf = AppendSSE(j.buf, "", ev.Data)
}

// chatChunkIn is what a continuation reads of a chunk.
type chatChunkIn struct {
	ID      string `json:"id"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// Resume implements StreamJournal: a stream of one choice that carried
// text only and had not finished can go on.
func (j *ChatJournal) Resume(inner StreamTranslator, used Usage) (*Resumption, error) {
	if j.full {
		return nil, ErrNotResumable
	}
	var text strings.Builder
	id := ""
	r := NewSSEReader(bytes.NewReader(j.buf), bufio.NewReaderSize(nil, 4096))
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil || string(ev.Data) == "[DONE]" {
			return nil, ErrNotResumable
		}
		var c chatChunkIn
		if json.Unmarshal(ev.Data, &c) != nil {
			return nil, ErrNotResumable
		}
		if id == "" {
			id = c.ID
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			if ch.Index != 0 || ch.FinishReason != nil || len(d.ToolCalls) > 0 && string(d.ToolCalls) != "null" || d.ReasoningContent != "" || d.Reasoning != "" {
				return nil, ErrNotResumable
			}
			text.WriteString(d.Content)
		}
	}
	used = relayedUsage(used, text.String())
	return &Resumption{Translator: &chatResumed{inner: inner, first: used, id: id}, Upstream: FormatOpenAI, Used: used, text: text.String()}, nil
}

// ChatPrefill is the chat request body that asks for the rest of an
// answer whose start is text, in dialect (assistant_prefill).
func ChatPrefill(body []byte, text, dialect string) ([]byte, error) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil, ErrNotResumable
	}
	var msgs []json.RawMessage
	if json.Unmarshal(req["messages"], &msgs) != nil || len(msgs) == 0 {
		return nil, ErrNotResumable
	}
	var last struct{ Role string }
	if json.Unmarshal(msgs[len(msgs)-1], &last) != nil || last.Role == "assistant" {
		return nil, ErrNotResumable
	}
	if n, ok := req["n"]; ok && string(n) != "1" && string(n) != "null" {
		return nil, ErrNotResumable
	}
	if text == "" {
		return body, nil
	}
	turn := map[string]any{"role": "assistant", "content": text}
	switch dialect {
	case PrefillContinueFinalMessage:
		req["continue_final_message"], req["add_generation_prompt"] = json.RawMessage("true"), json.RawMessage("false")
	case PrefillPrefix:
		turn["prefix"] = true
	case PrefillTrailing:
	default:
		return nil, ErrNotResumable
	}
	m, err := json.Marshal(turn)
	if err != nil {
		return nil, err
	}
	if req["messages"], err = json.Marshal(append(msgs, m)); err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// chatResumed feeds a continuation's chunks to the translator of the cut
// stream: under the cut stream's id, without a second role, its usage
// chunk the sum of both parts.
type chatResumed struct {
	inner StreamTranslator
	first Usage
	id    string
}

func (r *chatResumed) Usage() Usage {
	// The summed usage chunk put all of the first part's input in
	// prompt_tokens, which the inner translator counts as uncached.
	u := r.inner.Usage()
	u.InputTokens -= r.first.TotalInput()
	u.OutputTokens -= r.first.OutputTokens
	return u
}

func (r *chatResumed) Complete() bool           { return r.inner.Complete() }
func (r *chatResumed) Finish(dst []byte) []byte { return r.inner.Finish(dst) }
func (r *chatResumed) Unwrap() StreamTranslator { return r.inner }
func (r *chatResumed) Translate(dst []byte, ev Event) ([]byte, error) {
	if string(ev.Data) == "[DONE]" {
		return r.inner.Translate(dst, ev)
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(ev.Data, &c) != nil {
		return dst, errBadEvent
	}
	if r.id != "" {
		c["id"], _ = json.Marshal(r.id)
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(c["choices"], &choices) == nil {
		for _, ch := range choices {
			var d map[string]json.RawMessage
			if json.Unmarshal(ch["delta"], &d) == nil && d != nil {
				delete(d, "role")
				ch["delta"], _ = json.Marshal(d)
			}
		}
		c["choices"], _ = json.Marshal(choices)
	}
	if u, ok := c["usage"]; ok && string(u) != "null" {
		var m map[string]json.RawMessage
		var n struct{ PromptTokens, CompletionTokens int64 }
		if json.Unmarshal(u, &m) != nil || json.Unmarshal(u, &struct {
			P *int64 `json:"prompt_tokens"`
			C *int64 `json:"completion_tokens"`
		}{&n.PromptTokens, &n.CompletionTokens}) != nil {
			return dst, errBadEvent
		}
		in, out := n.PromptTokens+r.first.TotalInput(), n.CompletionTokens+r.first.OutputTokens
		m["prompt_tokens"], _ = json.Marshal(in)
		m["completion_tokens"], _ = json.Marshal(out)
		m["total_tokens"], _ = json.Marshal(in + out)
		c["usage"], _ = json.Marshal(m)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return dst, err
	}
	ev.Data = data
	return r.inner.Translate(dst, ev)
}
