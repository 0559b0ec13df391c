package providers

import (
	"errors"
	"strings"
	"testing"
)

// A journal copies at most MaxJournal of a stream; past it the stream is
// not continued (its cut ends with the error event), so a long answer is
// not held twice (a hostile review found the copy unbounded).
func TestJournalIsBounded(t *testing.T) {
	delta := Event{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("x", 4000) + `"}}`)}
	for name, j := range map[string]StreamJournal{"anthropic": &AnthropicJournal{}, "chat": &ChatJournal{}} {
		j.Add(Event{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}`)})
		for range MaxJournal/4000 + 2 {
			j.Add(delta)
		}
		var held int
		switch j := j.(type) {
		case *AnthropicJournal:
			held = len(j.buf)
		case *ChatJournal:
			held = len(j.buf)
		}
		if held > MaxJournal {
			t.Errorf("%s: the journal holds %d bytes, past MaxJournal", name, held)
		}
		if _, err := j.Resume(nil, Usage{}); !errors.Is(err, ErrNotResumable) {
			t.Errorf("%s: a stream past MaxJournal resumes (%v)", name, err)
		}
	}
}
