package secretscan

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// StreamRedactor redacts a streamed answer in the client's format
// (server-sent events whose data is JSON: chat completions, Messages,
// Responses, Gemini, and Converse before its AWS framing). Whole strings in
// an event are scanned as they are; the text deltas (a string under a
// "delta" member, Responses' top-level "delta", a Gemini candidate's part
// text) form one text per channel, scanned across events: the tail of each
// delta that could still be the start of a secret (after its last
// whitespace, at most maxCarry bytes; a private key's block up to
// multiLineSpan) is held back and sent at the front of the next delta of
// the same channel, or, when the channel ends, in a copy of its last delta
// event. What is held is bounded, and the delay is that of one word.
type StreamRedactor struct {
	rules  *Rules
	names  Namer
	redact bool // false: only detect (the log action)
	s      *scratch

	spans []strSpan // an event's strings, reused
	// haveDelta: the event being walked had its delta.
	haveDelta bool
	pathBuf   []byte // a delta's path, reused
	whereBuf  []byte // the same as a detection shows it, reused
	dec       []byte // a decoded string, reused
	joined    []byte // context and released text, reused
	path      []pathElem
	frames    []frame

	pending []byte // an event not yet complete
	carry   []byte // delta text held back
	context []byte // the delta text just before carry, already sent
	channel string // the carried delta's path
	where   []byte // the same as a detection shows it
	// template is the last delta event as sent, its delta string's span
	// (quotes included) at tStart:tEnd: the copy that carries a flush.
	template     []byte
	tStart, tEnd int

	// Detections are those found since the caller last cleared it.
	Detections []Detection
}

// maxCarry bounds the delta text held back at a chunk's edge (outside a
// private key's block); contextBytes is how much sent text stays as the
// left context of the next scan (a keyword before its value).
const (
	maxCarry     = 256
	contextBytes = 128
)

// NewStream starts a stream's redactor. Redact and Block redact (an
// answer is already paid for; blocking it would only hide it); Log only
// detects; Off returns nil.
func (f *Firewall) NewStream(action Action, names Namer) *StreamRedactor {
	if action == Off || action == "" {
		return nil
	}
	return &StreamRedactor{rules: f.rules, names: names, redact: action != Log, s: f.rules.newScratch()}
}

// Filter appends to dst the stream bytes in, redacted. An event cut off at
// the end of in waits for the rest.
func (sr *StreamRedactor) Filter(dst, in []byte) []byte {
	data := in
	if len(sr.pending) > 0 {
		sr.pending = append(sr.pending, in...)
		data = sr.pending
	}
	for len(data) > 0 {
		end := eventEnd(data)
		if end < 0 {
			break
		}
		dst = sr.event(dst, data[:end])
		data = data[end:]
	}
	sr.pending = append(sr.pending[:0], data...)
	return dst
}

// Finish appends the text still held, and any incomplete event as it is.
func (sr *StreamRedactor) Finish(dst []byte) []byte {
	dst = sr.flush(dst)
	dst = append(dst, sr.pending...)
	sr.pending = sr.pending[:0]
	return dst
}

// eventEnd is the length of the first complete event (its blank line
// included), or -1.
func eventEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if b[i+1] == '\n' {
			return i + 2
		}
		if b[i+1] == '\r' && i+2 < len(b) && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

type strSpan struct {
	start, end int
	escaped    bool
	delta      bool
	renamed    bool   // a member name with a secret in it
	name       string // what it is renamed to
}

func (sr *StreamRedactor) event(dst, ev []byte) []byte {
	ds, de := dataJSON(ev)
	if ds < 0 {
		return append(sr.flush(dst), ev...)
	}
	payload := ev[ds:de]
	sr.spans, sr.haveDelta = sr.spans[:0], false
	sr.pathBuf = sr.pathBuf[:0]
	w := walker{rs: sr.rules, src: payload, s: sr.s, path: sr.path[:0], frames: sr.frames[:0], str: sr}
	if sr.redact {
		w.names = sr.names
	}
	err := w.run()
	spans, haveDelta := sr.spans, sr.haveDelta
	sr.path, sr.frames = w.path, w.frames
	if err != nil {
		return append(sr.flush(dst), ev...)
	}
	sr.Detections = append(sr.Detections, w.dets...)
	if len(w.edits) > 0 {
		spans = withNames(spans, w.edits)
	}
	if !haveDelta || (len(sr.carry) > 0 && string(sr.pathBuf) != sr.channel) {
		dst = sr.flush(dst)
	}
	if haveDelta && string(sr.pathBuf) != sr.channel {
		sr.channel, sr.where = string(sr.pathBuf), append(sr.where[:0], sr.whereBuf...)
	}
	if !sr.redact {
		// Detect only: the event goes out as it came.
		for _, sp := range spans {
			text := sr.decode(payload, sp)
			if sp.delta {
				sr.advance(text)
			} else {
				sr.wholeHits(text, "answer")
			}
		}
		return append(dst, ev...)
	}
	start := len(dst)
	dst = append(dst, ev[:ds]...)
	last := 0
	tStart, tEnd := -1, -1
	for _, sp := range spans {
		text := sr.decode(payload, sp)
		var out string
		if sp.renamed {
			out = sp.name
		} else if sp.delta {
			out = sr.advance(text)
		} else {
			var changed bool
			if out, changed = sr.wholeHits(text, "answer"); !changed {
				continue
			}
		}
		dst = append(dst, payload[last:sp.start]...)
		if sp.delta {
			tStart = len(dst) - start
		}
		dst = append(dst, '"')
		dst = appendEscaped(dst, out)
		dst = append(dst, '"')
		if sp.delta {
			tEnd = len(dst) - start
		}
		last = sp.end
	}
	dst = append(dst, payload[last:]...)
	dst = append(dst, ev[de:]...)
	if tStart >= 0 {
		sr.template = append(sr.template[:0], dst[start:]...)
		sr.tStart, sr.tEnd = tStart, tEnd
	}
	return dst
}

// collect takes an event's string at payload[start:end] for event: the
// first delta, and the strings long enough to hold a secret. (A method
// rather than a closure over event's variables, which moved them and the
// closure to the heap on every event.)
func (sr *StreamRedactor) collect(path []pathElem, start, end int, escaped bool) {
	if end-start-2 == 0 {
		return
	}
	// One delta per event: the first; any other string is whole.
	d := !sr.haveDelta && isDelta(path)
	if !d && end-start-2 < minSecret {
		return
	}
	if d {
		sr.haveDelta = true
		sr.pathBuf = appendPath(sr.pathBuf, path)
		sr.whereBuf = appendLocation(sr.whereBuf[:0], path)
	}
	sr.spans = append(sr.spans, strSpan{start: start, end: end, escaped: escaped, delta: d})
}

// withNames merges the renamed member names into an event's strings, in
// the order they come.
func withNames(spans []strSpan, names []edit) []strSpan {
	merged := make([]strSpan, 0, len(spans)+len(names))
	for _, e := range names {
		for len(spans) > 0 && spans[0].start < e.start {
			merged, spans = append(merged, spans[0]), spans[1:]
		}
		merged = append(merged, strSpan{start: e.start, end: e.end, renamed: true, name: e.name})
	}
	return append(merged, spans...)
}

// decode views a string of the event as text, valid until the next
// decode.
func (sr *StreamRedactor) decode(payload []byte, sp strSpan) string {
	raw := payload[sp.start+1 : sp.end-1]
	if !sp.escaped {
		return unsafeString(raw)
	}
	sr.dec = jsonfast.AppendUnescaped(sr.dec[:0], raw)
	return unsafeString(sr.dec)
}

// dataJSON finds the JSON object of an event's data line: its offsets in
// ev, or -1 when the event carries none ([DONE], a comment).
func dataJSON(ev []byte) (int, int) {
	for off := 0; off < len(ev); {
		nl := bytes.IndexByte(ev[off:], '\n')
		if nl < 0 {
			nl = len(ev) - off
		}
		line := ev[off : off+nl]
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			s := off + 5
			if len(rest) > 0 && rest[0] == ' ' {
				s++
			}
			e := off + nl
			if e > s && ev[e-1] == '\r' {
				e--
			}
			if s < e && ev[s] == '{' {
				return s, e
			}
			return -1, -1
		}
		off += nl + 1
	}
	return -1, -1
}

// isDelta tells a streamed text delta by where it sits: under a "delta"
// member (chat's choices[].delta.content and tool arguments, Messages'
// delta.text and partial_json, Converse's contentBlockDelta.delta),
// Responses' top-level "delta", or a Gemini candidate's parts[].text. A
// thinking delta is not one: its signature covers it, so it is left as it
// is (it is the model's own reasoning, not an answer).
func isDelta(path []pathElem) bool {
	if len(path) == 0 {
		return false
	}
	last := path[len(path)-1].key
	switch {
	case last == "thinking", last == "reasoning_content", last == "reasoning", stateMember(last):
		return false
	}
	if len(path) == 1 {
		return last == "delta"
	}
	for _, p := range path[:len(path)-1] {
		if p.key == "delta" {
			return true
		}
	}
	return path[0].key == "candidates" && last == "text"
}

func appendPath(dst []byte, path []pathElem) []byte {
	for i, p := range path {
		if p.index >= 0 {
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, int64(p.index), 10)
			dst = append(dst, ']')
			continue
		}
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, p.key...)
	}
	return dst
}

// wholeHits scans a complete string of an event and returns it redacted.
func (sr *StreamRedactor) wholeHits(text, path string) (string, bool) {
	// A stream's short strings (its id, a call's id) are its own: only
	// long ones (a Response's echoed instructions) come back.
	hits, values := sr.hitsIn(text, len(text) < cleanStreamMinText)
	if len(hits) == 0 {
		return text, false
	}
	var b strings.Builder
	last := 0
	for i, h := range hits {
		d := Detection{Rule: h.Rule, Location: Location{Path: path, Message: -1}}
		b.WriteString(text[last:h.Start])
		if sr.redact {
			d.Placeholder = sr.names.Placeholder(h.Rule, valueOf(text, hits, values, i))
			b.WriteString(d.Placeholder)
		} else {
			b.WriteString(text[h.Start:h.End])
		}
		last = h.End
		sr.Detections = append(sr.Detections, d)
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// advance takes a channel's next delta and returns the text to send in
// its place: what is now known not to start a secret, redacted.
func (sr *StreamRedactor) advance(text string) string {
	sr.carry = append(sr.carry, text...)
	cut := safeCut(sr.carry)
	out := sr.release(sr.carry[:cut])
	sr.carry = append(sr.carry[:0], sr.carry[cut:]...)
	return out
}

// flush sends what a channel still holds, in a copy of its last delta
// event.
func (sr *StreamRedactor) flush(dst []byte) []byte {
	if len(sr.carry) == 0 {
		return dst
	}
	out := sr.release(sr.carry)
	sr.carry = sr.carry[:0]
	sr.context = sr.context[:0]
	if !sr.redact || sr.template == nil {
		return dst
	}
	dst = append(dst, sr.template[:sr.tStart]...)
	dst = append(dst, '"')
	dst = appendEscaped(dst, out)
	dst = append(dst, '"')
	return append(dst, sr.template[sr.tEnd:]...)
}

// release scans text after the channel's context and returns it with the
// parts of secrets that fall in it replaced (a secret that began in text
// already sent is cut off where text starts).
func (sr *StreamRedactor) release(text []byte) string {
	if len(text) == 0 {
		return ""
	}
	n := len(sr.context)
	sr.joined = append(append(sr.joined[:0], sr.context...), text...)
	full := unsafeString(sr.joined)
	// A delta's window is new text every time: remembering it would only
	// copy it.
	hits, values := sr.hitsIn(full, true)
	if len(hits) == 0 || hits[len(hits)-1].End <= n {
		sr.keepContext(full)
		return string(text)
	}
	var b strings.Builder
	last := n
	for i, h := range hits {
		if h.End <= n {
			continue
		}
		d := Detection{Rule: h.Rule, Location: Location{Path: string(sr.where), Message: -1}}
		s := max(h.Start, n)
		b.WriteString(full[last:s])
		if sr.redact {
			d.Placeholder = sr.names.Placeholder(h.Rule, valueOf(full, hits, values, i))
			b.WriteString(d.Placeholder)
		} else {
			b.WriteString(full[s:h.End])
		}
		last = h.End
		sr.Detections = append(sr.Detections, d)
	}
	b.WriteString(full[last:])
	sr.keepContext(full)
	return b.String()
}

// keepContext keeps the end of the text just released as the next scan's
// left context.
func (sr *StreamRedactor) keepContext(full string) {
	sr.context = append(sr.context[:0], full[max(len(full)-contextBytes, 0):]...)
}

// safeCut is how much of text can be sent: up to its last whitespace, so
// no token is cut, and at most maxCarry short of its end; an unfinished
// private key's block is held whole, up to multiLineSpan.
func safeCut(text []byte) int {
	keyEnd := 0
	if b := bytes.LastIndex(text, []byte("-----BEGIN")); b >= 0 && len(text)-b < multiLineSpan {
		e := bytes.Index(text[b:], []byte("-----END"))
		if e < 0 {
			return b
		}
		c := bytes.Index(text[b+e+8:], []byte("-----"))
		if c < 0 {
			return b
		}
		keyEnd = b + e + 8 + c + 5 // the block is whole: never cut inside it
	}
	cut := bytes.LastIndexAny(text, " \t\n\r") + 1
	return max(cut, len(text)-carryBound(text, cut), keyEnd)
}
