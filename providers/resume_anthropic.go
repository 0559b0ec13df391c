package providers

// Continuing an Anthropic upstream stream that was cut after the client
// got part of its answer: what the client has (AnthropicJournal), the
// request that asks another deployment for the rest with that part as the
// assistant's prefill (AnthropicPrefill), and the translator that splices
// the second stream's events onto the first (NewAnthropicResumed), so the
// client's translator sees one message: one message_start, continuous
// block indices, one final usage summing both parts.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// ErrNotResumable is the answer when the part of an answer the client has
// cannot be sent as a prefill (a tool call, thinking, a finished answer, a request that
// ends with its own prefill or thinks), so the stream ends with an error
// event instead.
var ErrNotResumable = errors.New("the answer so far cannot be continued elsewhere")

// AnthropicPreamble reports whether ev is an Anthropic stream event that
// comes before any content (message_start, ping, content_block_start):
// the first token is the first event that is not.
func AnthropicPreamble(ev Event) bool {
	switch string(ev.Name) {
	case "message_start", "ping", "content_block_start":
		return true
	}
	return false
}

// AnthropicJournal keeps the events of an Anthropic upstream stream that
// say what the client has been sent. It copies them as they pass and reads
// them only when the stream breaks.
type AnthropicJournal struct {
	buf []byte
	// full: the stream passed MaxJournal and is not continued.
	full bool
}

// Add notes one upstream event; a nil journal notes nothing.
func (j *AnthropicJournal) Add(ev Event) {
	if j == nil {
		return
	}
	switch string(ev.Name) {
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta":
		if j.full || journalFull(j.buf, len(ev.Name)+len(ev.Data)+16) {
			j.full, j.buf = true, nil
			return
		}
		j.buf = AppendSSE(j.buf, ev.Name, ev.Data)
	}
}

// Resume implements StreamJournal.
func (j *AnthropicJournal) Resume(inner StreamTranslator, used Usage) (*Resumption, error) {
	if j.full {
		return nil, ErrNotResumable
	}
	p, err := j.Prefix()
	if err != nil {
		return nil, err
	}
	used = relayedUsage(used, p.Text)
	return &Resumption{Translator: NewAnthropicResumed(inner, p, used), Upstream: FormatAnthropic, Used: used, text: p.Text}, nil
}

// AnthropicPrefix is what the client of a cut stream has.
type AnthropicPrefix struct {
	Text   string // the assistant's text so far, as sent
	Blocks int    // content blocks started
	Open   bool   // the last block is text and was not stopped
}

// Prefix reads what the client has, or ErrNotResumable.
func (j *AnthropicJournal) Prefix() (AnthropicPrefix, error) {
	var p AnthropicPrefix
	var text strings.Builder
	r := NewSSEReader(bytes.NewReader(j.buf), bufio.NewReaderSize(nil, 4096))
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return p, ErrNotResumable
		}
		var e struct {
			ContentBlock struct{ Type string } `json:"content_block"`
			Delta        struct{ Type, Text string }
		}
		if json.Unmarshal(ev.Data, &e) != nil {
			return p, ErrNotResumable
		}
		switch string(ev.Name) {
		case "content_block_start":
			if e.ContentBlock.Type != "text" {
				return p, ErrNotResumable
			}
			p.Blocks++
			p.Open = true
		case "content_block_delta":
			if e.Delta.Type != "text_delta" {
				return p, ErrNotResumable
			}
			text.WriteString(e.Delta.Text)
		case "content_block_stop":
			p.Open = false
		case "message_delta":
			// The answer had ended; only its last events were lost.
			return p, ErrNotResumable
		}
	}
	p.Text = text.String()
	return p, nil
}

// AnthropicPrefill is the Messages request body that asks for the rest of
// an answer whose start is text: the request with text as the assistant's
// last turn, trailing whitespace removed (the API refuses it there).
func AnthropicPrefill(body []byte, text string) ([]byte, error) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil, ErrNotResumable
	}
	if t, ok := req["thinking"]; ok && !bytes.Contains(t, []byte(`"disabled"`)) {
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
	text = strings.TrimRightFunc(text, unicode.IsSpace)
	if text == "" {
		return body, nil
	}
	turn, err := json.Marshal(map[string]any{"role": "assistant", "content": []map[string]string{{"type": "text", "text": text}}})
	if err != nil {
		return nil, err
	}
	if req["messages"], err = json.Marshal(append(msgs, turn)); err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// anthropicResumed feeds a continuation's events to the translator of
// the cut stream as if they were its own.
type anthropicResumed struct {
	inner StreamTranslator
	first Usage // the cut part's usage, as recorded
	shift int   // added to the continuation's block indices
	// merge: the continuation's first block, if text, continues the cut
	// stream's open text block; closeOpen: that block still needs its
	// stop once the continuation starts something else.
	merge, closeOpen bool
	openIndex        int
	started          bool // the continuation's first block came
	// trim: the prefill dropped trailing whitespace the client already
	// has, so the continuation's leading whitespace is dropped too.
	trim    bool
	second  Usage // the continuation's usage
	scratch []byte
}

// NewAnthropicResumed wraps inner, the client's translator of a stream cut
// after the client got p, for the continuation's events. first is the
// usage recorded for the cut part: the client's final usage adds it,
// Usage reports the continuation's alone.
func NewAnthropicResumed(inner StreamTranslator, p AnthropicPrefix, first Usage) StreamTranslator {
	r := &anthropicResumed{inner: inner, first: first, shift: p.Blocks, openIndex: p.Blocks - 1}
	if p.Open {
		r.merge, r.closeOpen, r.shift = true, true, p.Blocks-1
	}
	r.trim = strings.TrimRightFunc(p.Text, unicode.IsSpace) != p.Text
	return r
}

func (r *anthropicResumed) Usage() Usage {
	u := r.inner.Usage()
	u.InputTokens -= r.first.InputTokens
	u.OutputTokens -= r.first.OutputTokens
	u.CacheReadTokens -= r.first.CacheReadTokens
	u.CacheCreation5m -= r.first.CacheCreation5m
	u.CacheCreation1h -= r.first.CacheCreation1h
	return u
}

func (r *anthropicResumed) Complete() bool           { return r.inner.Complete() }
func (r *anthropicResumed) Finish(dst []byte) []byte { return r.inner.Finish(dst) }

func (r *anthropicResumed) Translate(dst []byte, ev Event) ([]byte, error) {
	if !jsonfast.Valid(ev.Data) {
		return dst, errBadEvent
	}
	switch string(ev.Name) {
	case "message_start":
		var e struct {
			Message struct{ Usage AnthropicUsage }
		}
		if json.Unmarshal(ev.Data, &e) != nil {
			return dst, errBadEvent
		}
		r.second = usageFromAnthropic(&e.Message.Usage)
		return dst, nil
	case "content_block_start":
		first := !r.started
		r.started = true
		if first && r.merge {
			var e struct {
				ContentBlock struct{ Type string } `json:"content_block"`
			}
			if json.Unmarshal(ev.Data, &e) == nil && e.ContentBlock.Type == "text" {
				r.closeOpen = false
				return dst, nil
			}
			r.shift++
		}
		if r.closeOpen {
			r.closeOpen = false
			var err error
			stop := `{"type":"content_block_stop","index":` + strconv.Itoa(r.openIndex) + `}`
			if dst, err = r.inner.Translate(dst, Event{Name: []byte("content_block_stop"), Data: []byte(stop)}); err != nil {
				return dst, err
			}
		}
		r.trim = false
		return r.reindexed(dst, ev)
	case "content_block_delta":
		if r.trim {
			var e struct {
				Index int
				Delta struct{ Type, Text string }
			}
			if json.Unmarshal(ev.Data, &e) != nil {
				return dst, errBadEvent
			}
			if e.Delta.Type == "text_delta" {
				text := strings.TrimLeftFunc(e.Delta.Text, unicode.IsSpace)
				if text == "" {
					return dst, nil
				}
				r.trim = false
				data, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": e.Index, "delta": map[string]string{"type": "text_delta", "text": text}})
				ev.Data = data
			}
		}
		return r.reindexed(dst, ev)
	case "content_block_stop":
		return r.reindexed(dst, ev)
	case "message_delta":
		return r.summed(dst, ev)
	}
	return r.inner.Translate(dst, ev)
}

// reindexed moves the event's block index past the cut stream's blocks.
func (r *anthropicResumed) reindexed(dst []byte, ev Event) ([]byte, error) {
	v, ok, err := jsonfast.FindMember(ev.Data, 0, "index")
	if err != nil || !ok {
		return dst, errBadEvent
	}
	i, err := strconv.Atoi(string(ev.Data[v.Start:v.End]))
	if err != nil || i < 0 || i > 1<<16 {
		return dst, errBadEvent
	}
	r.scratch = append(append(append(r.scratch[:0], ev.Data[:v.Start]...), strconv.Itoa(i+r.shift)...), ev.Data[v.End:]...)
	ev.Data = r.scratch
	return r.inner.Translate(dst, ev)
}

// summed gives the final usage as both parts' sums: the client sees one
// answer, which used both calls' tokens.
func (r *anthropicResumed) summed(dst []byte, ev Event) ([]byte, error) {
	v, ok, err := jsonfast.FindMember(ev.Data, 0, "usage")
	if err != nil || !ok || ev.Data[v.Start] != '{' {
		return r.inner.Translate(dst, ev)
	}
	var d AnthropicUsage
	if json.Unmarshal(ev.Data[v.Start:v.End], &d) != nil {
		return dst, errBadEvent
	}
	u := r.second
	mergeDeltaUsage(&u, &d)
	in := r.first.InputTokens + u.InputTokens
	read := r.first.CacheReadTokens + u.CacheReadTokens
	created := r.first.CacheCreation5m + u.CacheCreation5m + r.first.CacheCreation1h + u.CacheCreation1h
	sum := AnthropicUsage{InputTokens: &in, OutputTokens: r.first.OutputTokens + u.OutputTokens,
		CacheReadInputTokens: &read, CacheCreationInputTokens: &created, ServiceTier: u.ServiceTier,
		CacheCreation: &AnthropicCacheCreation{Ephemeral5m: r.first.CacheCreation5m + u.CacheCreation5m, Ephemeral1h: r.first.CacheCreation1h + u.CacheCreation1h}}
	b, err := json.Marshal(sum)
	if err != nil {
		return dst, err
	}
	r.scratch = append(append(append(r.scratch[:0], ev.Data[:v.Start]...), b...), ev.Data[v.End:]...)
	ev.Data = r.scratch
	return r.inner.Translate(dst, ev)
}

// Unwrap is the client's translator underneath, which ends a broken
// stream in its own format (StreamFailer).
func (r *anthropicResumed) Unwrap() StreamTranslator { return r.inner }
