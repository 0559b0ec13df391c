package handlers

// What a stream cut short is charged for: at least the output its client
// was sent, whatever the upstream had counted by then.

import (
	"bytes"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// generatedBytes is how many bytes of generated output the client-format
// stream bytes b carry: the lengths of the string values of the fields
// that carry it, escapes counted as written. One pass from key to key;
// string values are stepped over, not searched.
func generatedBytes(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], []byte(`":`))
		if j < 0 {
			break
		}
		keyEnd := i + j
		v := keyEnd + 2
		for v < len(b) && (b[v] == ' ' || b[v] == '\t') {
			v++
		}
		if v >= len(b) || b[v] != '"' {
			i = v // an object, array, number or literal: its keys come next
			continue
		}
		end := v + stringEnd(b[v:])
		if k := bytes.LastIndexByte(b[i:keyEnd], '"'); k >= 0 {
			switch key := b[i+k+1 : keyEnd]; string(key) {
			case "text", "content", "delta", "arguments", "partial_json", "thinking", "reasoning_content", "refusal", "input":
				// Messages, Gemini and Converse text; Chat Completions
				// content, reasoning and refusals; Responses deltas; tool
				// call arguments; thinking.
				n += end - v - 1
			case "type":
				// The Responses API's *.done events and response.completed
				// carry the whole text again: counting them would charge
				// it twice.
				if t := b[v+1 : end]; bytes.HasSuffix(t, []byte(".done")) || string(t) == "response.completed" || string(t) == "response.incomplete" {
					return 0
				}
			}
		}
		i = end + 1
	}
	return n
}

// stringEnd is the index of the quote closing the JSON string s opens
// (s[0] is its opening quote), or len(s) when it is not closed.
func stringEnd(s []byte) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s)
}

// cutMeter is what one upstream attempt's answer had given its client
// when the request ended: the floor of a request cut by its client or
// its upstream (floor), applied where the record is settled (settle), so
// every way in gets it by construction.
type cutMeter struct {
	// d is the deployment that accepted the request (its answer began);
	// nil: none did, and nothing was billed.
	d *upstream.Deployment
	// done: the upstream's own usage of a whole answer (or its refusal)
	// is on the record; nothing was cut.
	done bool
	// hadEnd: the client was written the answer's end before the
	// upstream's side was cut; only the usage the upstream had still to
	// send is estimated.
	hadEnd bool
	// inputBytes is the whole input the upstream was sent and bills (a
	// Responses turn's stored history too).
	inputBytes int
	// events and relayed are the events that reached the client as
	// output and the bytes of generated text in them.
	events, relayed int
	// quiet is how long the upstream worked without sending its client
	// generated text, past a grace per pause (hidden reasoning's time);
	// last is when it last sent some, or was sent the request.
	quiet time.Duration
	last  time.Time
	// beforeFirst is the part of quiet before the first generated text:
	// hidden work only for a model that may reason (mayReason).
	beforeFirst time.Duration
	// bound is the request's output bound, else the one a budgeted
	// request is sent (model_info.max_output_tokens, else
	// default_max_tokens), times its choices; 0 for a turn that
	// generates nothing.
	bound int64
}

// quietGrace is a pause in an answer not counted as hidden work: the
// upstream's queue, a long prompt's first token, a network stall.
const quietGrace = time.Second

// hiddenTokensPerSecond is what a model is taken to generate unseen,
// per second it works without sending text (a reasoning model's hidden
// reasoning): about a fast reasoning model's decode rate, so that
// cutting such a stream is no cheaper than letting it finish.
const hiddenTokensPerSecond = 100

// accept starts the meter of an attempt whose upstream accepted the
// request at t.
func (m *cutMeter) accept(d *upstream.Deployment, inputBytes int, bound int64, t time.Time) {
	*m = cutMeter{d: d, inputBytes: inputBytes, bound: bound, last: t}
}

// relay counts out, an event's output written to the client at now().
// The clock is read only for an event that carries generated text.
func (m *cutMeter) relay(out []byte, now func() time.Time) {
	m.events++
	if n := generatedBytes(out); n > 0 {
		m.pause(now())
		if m.relayed == 0 {
			m.beforeFirst = m.quiet
		}
		m.relayed += n
	}
}

// pause adds the time since the last text, past the grace, to quiet.
func (m *cutMeter) pause(t time.Time) {
	if d := t.Sub(m.last) - quietGrace; d > 0 {
		m.quiet += d
	}
	m.last = t
}

// floor is the usage of a request cut at t, u as its upstream counted
// it so far: the input at least a token per 4 bytes of the input sent
// (the upstream bills what it was sent), the output at least a token per
// event relayed and per 4 bytes of text relayed (upstreams count output
// at the end, Anthropic's message_start as 1, so a client that leaves
// before the last event would otherwise read the answer at almost no
// charge); a client that had the answer's end is estimated only what the
// upstream did not count. A client's cut (byClient) is charged the upstream's unseen
// work too: hidden reasoning is billed by the provider but never reaches
// the stream, so the time the upstream worked without sending text is
// counted at hiddenTokensPerSecond, within the request's output bound
// (the one the gateway would send when the request sets none); the
// silence before the first text only when reasons (mayReason): before
// it, a model that does not reason was queued or stalled, not working.
func (m *cutMeter) floor(u providers.Usage, t time.Time, byClient, reasons bool) providers.Usage {
	if u.TotalInput() == 0 {
		u.InputTokens = int64(m.inputBytes / 4)
	}
	if u.OutputTokens == 0 {
		u.OutputTokens = int64(m.events)
	}
	if m.hadEnd {
		return u
	}
	u.OutputTokens = max(u.OutputTokens, int64(m.relayed+3)/4)
	if byClient {
		m.pause(t)
		if m.relayed == 0 {
			m.beforeFirst = m.quiet
		}
		quiet := m.quiet
		if !reasons {
			quiet -= m.beforeFirst
		}
		hidden := int64(quiet.Seconds() * hiddenTokensPerSecond)
		u.OutputTokens = min(u.OutputTokens+hidden, max(m.bound, u.OutputTokens))
	}
	return u
}

// settle applies the cut floor to a record whose upstream accepted the
// request and whose answer was not had whole, then settles its budget:
// the one place a request's record is settled.
func (g *Gateway) settle(x *exchange) {
	rec := x.rec
	if m := &x.cut; m.d != nil && !m.done {
		u := providers.Usage{InputTokens: rec.InputTokens, CacheCreation5m: rec.CacheCreation5m,
			CacheCreation1h: rec.CacheCreation1h, CacheReadTokens: rec.CacheReadTokens, OutputTokens: rec.OutputTokens,
			WebSearches: ledger.WebSearchesCharged(rec)}
		byClient := rec.Outcome == ledger.OutcomeCancelled
		// A non-streaming answer's upstream generates unseen all along:
		// its whole silence is work, whatever the model.
		unseen := byClient && (!x.info.Stream || mayReason(m.d.Entry().ReasonsUnseen, x.body))
		applyUsage(rec, m.floor(u, g.now(), byClient, unseen), m.d)
		m.done = true // settled: a second settle changes nothing
	}
	settleBudget(x.hold, rec)
}
