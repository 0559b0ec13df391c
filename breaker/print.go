package breaker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Format is the wire format of a request's history: where its turns,
// tool calls and tool results are.
type Format uint8

const (
	// FormatOther has no history the breaker reads: only turns and spend
	// are watched.
	FormatOther Format = iota
	// FormatMessages is Anthropic's Messages API (Claude Code).
	FormatMessages
	// FormatChat is OpenAI's chat completions.
	FormatChat
	// FormatResponses is OpenAI's Responses API (Codex).
	FormatResponses
	// FormatGemini is Google's Gemini API (Gemini CLI).
	FormatGemini
	// FormatConverse is Amazon Bedrock's Converse API.
	FormatConverse
)

// member is the top-level array holding a format's history.
func (f Format) member() string {
	switch f {
	case FormatMessages, FormatChat, FormatConverse:
		return "messages"
	case FormatResponses:
		return "input"
	case FormatGemini:
		return "contents"
	}
	return ""
}

// print is what a request tells of the turn before it: the agent's last
// answer (its tool calls and text) and what its tools returned. Only
// hashes are kept; tool is for the messages of a trip and never stored.
type print struct {
	// key identifies the turn: its calls (names and canonical arguments)
	// and their results, or its text when it made no call. 0: nothing to
	// compare (the first turn of a session, or an unreadable body).
	key uint64
	// fail is the class of the results' failure when every result
	// failed the same way; 0 otherwise.
	fail uint32
	// calls: the turn made tool calls.
	calls bool
	// tail identifies the request's tail, so a retried request is not
	// counted as a second turn.
	tail uint64
	// thread tells apart the conversations of one session (Claude Code's
	// subagents run under their parent's session id): the entryHash of
	// the history's first entry, which stays the same turn after turn.
	thread uint64
	// prev and head chain a conversation's turns (conversation.go): head
	// identifies the history's last entry, prev the entry before the
	// model's last answer (0: no answer yet), which is the head of the
	// turn before when this turn extends that turn's history.
	prev, head uint64
	// tool is the first tool the turn called.
	tool string
}

// entry is one history entry's part of a turn, read from its bytes.
type entry struct {
	produced bool // by the model (a call, its text), not a result or a person
	calls    []call
	text     string // the model's text
	results  []result
}

type call struct {
	id, name string
	args     uint64 // entryHash: the same call written two ways is one call
}

type result struct {
	id, name string // name: when the format names it (Gemini)
	content  []byte
	failed   bool
	class    string // how it failed: a first line, an exit code
}

// fingerprint reads the turn before the request out of its history's
// last entries.
func fingerprint(f Format, body []byte) print {
	member := f.member()
	if member == "" {
		return print{}
	}
	t, ok := tailOf(body, member)
	if !ok || t.n == 0 {
		return print{}
	}
	// Entries are decoded from the end, as far as the turn reaches: the
	// results after the model's last run of entries, that run, and the
	// one entry before it.
	var entries [maxTail]entry
	var read [maxTail]bool
	get := func(i int) *entry {
		if !read[i] {
			s := t.spans[i]
			entries[i], read[i] = readEntry(f, body[s.start:s.end]), true
		}
		return &entries[i]
	}
	// The turn: the model's last run of entries and everything after it.
	end := t.n
	i := end
	for i > 0 && !get(i-1).produced {
		i--
	}
	first := i
	for first > 0 && get(first-1).produced {
		first--
	}
	from := t.spans[min(first, t.n-1)].start
	// The tail's place in the history is part of it: a format without
	// call ids (Gemini's) writes the same turn twice in the same bytes.
	last := t.spans[t.n-1]
	p := print{tail: xxhash.Sum64(body[from:last.end]) ^ uint64(t.total)*0x9e3779b97f4a7c15, thread: entryHash(body[t.first.start:t.first.end]),
		head: entryHash(body[last.start:last.end]) | 1}
	if first == i {
		return p // no answer of the model yet: the session's first turn
	}
	if first > 0 {
		p.prev = entryHash(body[t.spans[first-1].start:t.spans[first-1].end]) | 1
	}
	d := xxhash.New()
	var args [8]byte
	names := map[string]string{}
	var text strings.Builder
	for _, e := range entries[first:i] {
		for _, c := range e.calls {
			p.calls = true
			if p.tool == "" {
				p.tool = c.name
			}
			names[c.id] = c.name
			_, _ = d.WriteString(c.name)
			_, _ = d.Write([]byte{0})
			binary.LittleEndian.PutUint64(args[:], c.args)
			_, _ = d.Write(args[:])
			_, _ = d.Write([]byte{1})
		}
		text.WriteString(e.text)
	}
	if !p.calls {
		if text.Len() == 0 {
			return p
		}
		_, _ = d.WriteString(text.String())
		p.key = d.Sum64() | 1
		return p
	}
	failed, classes := 0, ""
	nres := 0
	for _, e := range entries[i:end] {
		for _, r := range e.results {
			nres++
			_, _ = d.Write([]byte{2})
			if r.failed {
				writeMasked(d, r.content)
			} else {
				_, _ = d.Write(r.content)
			}
			if r.failed {
				failed++
				name := r.name
				if name == "" {
					name = names[r.id]
				}
				classes += name + "\x00" + r.class + "\x01"
			}
		}
	}
	p.key = d.Sum64() | 1
	if nres > 0 && failed == nres {
		p.fail = uint32(xxhash.Sum64String(classes)) | 1
	}
	return p
}

func readEntry(f Format, raw []byte) entry {
	switch f {
	case FormatMessages:
		return readMessage(raw)
	case FormatChat:
		return readChat(raw)
	case FormatResponses:
		return readItem(raw)
	case FormatGemini:
		return readContent(raw)
	case FormatConverse:
		return readConverse(raw)
	}
	return entry{}
}

// textOf is the text of a content that is a string or a list of parts
// with text.
func textOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// classOf is how a failed result failed: its first two lines (an exit
// code and the error under it), digits masked so a line number or a count
// does not make two failures different, at most 100 bytes. Two failures
// of one class are the same failure for the failing rule.
func classOf(text string) string {
	var b strings.Builder
	lines := 0
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if lines++; lines > 2 {
			break
		}
		for _, r := range line {
			if b.Len() >= 100 {
				break
			}
			if r >= '0' && r <= '9' {
				r = '#'
			}
			b.WriteRune(r)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// quietNo reports a failure that is an answer: exit code 1 and not a word
// more (grep that found nothing, a test(1) that was false, diff of
// different files with -q). It does not count as a tool failing.
func quietNo(text string) bool {
	code, ok := exitCode(text)
	text = strings.TrimSpace(text)
	return ok && code == 1 && !strings.Contains(text, "\n") && len(text) <= len("Process exited with code 1")
}

// failedText reports a tool result that says it failed, for formats with
// no error flag: a non-zero exit code near its start (Codex's shell
// output, "Exit code: 1"; a JSON "exit_code": 1) or a first word "error".
func failedText(text string) bool {
	if code, ok := exitCode(text); ok {
		return code != 0 && !quietNo(text)
	}
	head := strings.ToLower(strings.TrimSpace(text[:min(len(text), 16)]))
	return strings.HasPrefix(head, "error") || strings.HasPrefix(head, "<tool_use_error>")
}

// exitCode finds an exit code in a result's first 300 bytes.
func exitCode(text string) (int, bool) {
	head := strings.ToLower(text[:min(len(text), 300)])
	for _, mark := range [...]string{"exit code", "exit_code", "exited with code", "exit status"} {
		i := strings.Index(head, mark)
		if i < 0 {
			continue
		}
		rest := head[i+len(mark):]
		j := 0
		for j < len(rest) && j < 4 && (rest[j] == ':' || rest[j] == ' ' || rest[j] == '"' || rest[j] == '=') {
			j++
		}
		k := j
		for k < len(rest) && k-j < 4 && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		if k > j {
			n, _ := strconv.Atoi(rest[j:k])
			return n, true
		}
	}
	return 0, false
}

// writeMasked hashes a failed tool result without the lines that change
// on every run whatever the command does: Codex's "Wall time: 0.1
// seconds" and "Chunk ID: 745a16", Gemini CLI's "Process Group PGID: 4711", durations. A call
// that fails the same way each time is then the same failure. Every
// other line is kept as it is (a count of failing tests is progress), and
// results that did not fail are hashed whole.
func writeMasked(d *xxhash.Digest, b []byte) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		if !noiseLine(line) {
			_, _ = d.Write(line)
		}
	}
}

func noiseLine(line []byte) bool {
	if len(line) > 120 {
		return false
	}
	l := strings.ToLower(string(line))
	for _, w := range [...]string{"wall time", "chunk id", "pgid", "process group", "elapsed", "duration"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
