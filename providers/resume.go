package providers

// A stream cut after the client got part of its answer, continued on
// another deployment: the journal of what the client was sent, per
// upstream format, and what it yields when the stream breaks (the
// request that asks for the rest, the translator that splices the rest
// in). resume_anthropic.go and resume_chat.go hold the formats.

// journalStart is a journal's first buffer: a few dozen events.
const journalStart = 4 << 10

// StreamJournal notes the events of an upstream stream as they pass and,
// when the stream breaks, says how it can be continued.
type StreamJournal interface {
	Add(ev Event)
	// Resume is the continuation of the stream whose client translator
	// is inner and whose cut part was recorded with usage used, or
	// ErrNotResumable.
	Resume(inner StreamTranslator, used Usage) (*Resumption, error)
}

// MaxJournal bounds what a journal copies of one stream: an answer
// longer than this is not continued elsewhere (its cut ends with the error
// event, as before continuation existed), so that every streamed request
// on an alias with somewhere to continue does not hold a whole copy of a
// long answer.
const MaxJournal = 1 << 20

// journalFull reports whether adding n bytes to buf would pass
// MaxJournal.
func journalFull(buf []byte, n int) bool { return len(buf)+n > MaxJournal }

// Resumption is how a cut stream goes on.
type Resumption struct {
	// Translator feeds the continuation's events to the client's
	// translator as the cut stream's own.
	Translator StreamTranslator
	// Upstream is the format the continuation must come in.
	Upstream Format
	// Used is the cut part's usage: as its upstream reported it, its
	// output at least what the client was sent (relayedUsage).
	Used Usage
	text string
}

// relayedUsage is the usage of a cut part whose client was sent text:
// an upstream reports its output count at the end, or as 1 in
// Anthropic's message_start, so the output is at least a token per 4
// bytes of the text relayed (a cut stream must not be cheaper than what
// its client read).
func relayedUsage(u Usage, text string) Usage {
	u.OutputTokens = max(u.OutputTokens, int64(len(text)+3)/4)
	return u
}

// NewStreamJournal is the journal of an upstream stream in format up, or
// nil when streams in it cannot be continued.
func NewStreamJournal(up Format) StreamJournal {
	// One allocation holds a short answer's events; a long one grows it.
	switch up {
	case FormatAnthropic:
		return &AnthropicJournal{buf: make([]byte, 0, journalStart)}
	case FormatOpenAI:
		return &ChatJournal{buf: make([]byte, 0, journalStart)}
	}
	return nil
}

// Prefill is the continuation's request: body, already in the
// continuation upstream's format, with the answer so far as the
// assistant's last turn, as dialect (a chat backend's
// assistant_prefill) asks.
func (r *Resumption) Prefill(body []byte, dialect string) ([]byte, error) {
	if r.Upstream == FormatAnthropic {
		return AnthropicPrefill(body, r.text)
	}
	return ChatPrefill(body, r.text, dialect)
}
