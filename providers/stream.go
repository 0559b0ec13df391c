package providers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Event is one unit of an upstream stream: an SSE event (Name is its
// `event:` field, empty for OpenAI) or one NDJSON line (Name empty). The
// slices are only valid until the next call to Next.
type Event struct {
	Name []byte
	Data []byte
}

// EventReader yields upstream stream events one at a time; Next returns
// io.EOF after the last one.
type EventReader interface {
	Next() (Event, error)
}

// StreamTranslator turns upstream stream events into the client's wire
// format as they arrive, keeping whatever state the translation needs
// (open content blocks, tool-call indexes, usage so far). One per request.
type StreamTranslator interface {
	// Translate appends to dst the client-format bytes for ev (possibly
	// none) and returns the extended slice. An error means the stream
	// cannot go on: an *APIError is one the upstream reported in-band
	// (never relayed as is: the caller renders it in the client's family
	// after removing the deployment's secrets); any other error is an
	// event that cannot be translated. Either way the caller ends the
	// stream with its own error event.
	Translate(dst []byte, ev Event) ([]byte, error)
	// Finish appends what ends the client stream after the upstream stream
	// ended cleanly (for example `data: [DONE]`, or the closing Anthropic
	// events when the upstream never sent a finish reason).
	Finish(dst []byte) []byte
	// Usage is the usage seen so far.
	Usage() Usage
	// Complete reports, once the upstream has stopped sending, whether
	// its own end marker arrived ([DONE], a finish reason, message_stop,
	// done:true). A stream that just stops is incomplete, never a success.
	Complete() bool
}

// StreamFailer is a translator that ends a broken stream itself, because
// its client format's ending needs the stream's state (the Responses API
// numbers every event and sends the output so far in response.failed).
type StreamFailer interface {
	Fail(dst []byte, e *APIError) []byte
}

// inBandError reads an error the upstream sent as a stream event. OpenAI's
// error chunk and Anthropic's error event share the shape
// {"error":{"type","message"}}.
func inBandError(data []byte) *APIError {
	var ev struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	if ev.Error.Message == "" {
		ev.Error.Message = "upstream error"
	}
	return &APIError{Status: statusForErrorType(ev.Error.Type), Message: ev.Error.Message}
}

// ErrEventTooLarge is returned when one SSE event (its lines together) or
// one NDJSON object exceeds MaxEventBytes; a well-behaved upstream never
// gets close, and a hostile or broken one must not grow memory without
// limit.
var ErrEventTooLarge = errors.New("upstream stream event exceeds 16 MiB")

// MaxEventBytes bounds one stream event. Ollama sends a whole tool call's
// arguments in one line, so it is generous.
const MaxEventBytes = 16 << 20

// lineReader reads newline-terminated lines, reusing one scratch buffer
// for lines longer than the bufio buffer.
type lineReader struct {
	br      *bufio.Reader
	scratch []byte
}

func (l *lineReader) readLine() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.scratch = append(l.scratch[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			l.scratch = append(l.scratch, line...)
			if len(l.scratch) > MaxEventBytes {
				return nil, ErrEventTooLarge
			}
		}
		line = l.scratch
	}
	if err != nil && len(line) == 0 {
		return nil, err
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	line = bytes.TrimRight(line, "\r\n")
	return line, nil
}

// SSEReader parses a text/event-stream body into events. Comments (lines
// starting with ':') and `id:`/`retry:` fields are ignored; several `data:`
// lines of one event are joined with '\n' as the SSE spec says.
type SSEReader struct {
	lr   lineReader
	name []byte
	data []byte
}

// NewSSEReader reads events from r through br, which may be pooled; br is
// Reset to r.
func NewSSEReader(r io.Reader, br *bufio.Reader) *SSEReader {
	br.Reset(r)
	return &SSEReader{lr: lineReader{br: br}}
}

// Next returns the next event with a non-empty data field.
func (s *SSEReader) Next() (Event, error) {
	s.name = s.name[:0]
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.lr.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				return Event{Name: s.name, Data: s.data}, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				return Event{Name: s.name, Data: s.data}, nil
			}
			s.name = s.name[:0]
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
		case "data":
			// Many short data lines with no blank line between them are
			// one event: bound their sum, not only each line.
			if len(s.data)+len(value)+1 > MaxEventBytes {
				return Event{}, ErrEventTooLarge
			}
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		}
	}
}

// NDJSONReader yields one event per non-empty line.
type NDJSONReader struct {
	lr lineReader
}

// NewNDJSONReader reads lines from r through br, which may be pooled.
func NewNDJSONReader(r io.Reader, br *bufio.Reader) *NDJSONReader {
	br.Reset(r)
	return &NDJSONReader{lr: lineReader{br: br}}
}

// Next returns the next non-empty line.
func (n *NDJSONReader) Next() (Event, error) {
	for {
		line, err := n.lr.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return Event{Data: line}, nil
	}
}

// AppendSSE appends one SSE event; name may be empty (OpenAI style).
func AppendSSE[N string | []byte](dst []byte, name N, data []byte) []byte {
	if len(name) > 0 {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// oneLineJSON keeps relayed JSON on one SSE data line. An upstream may
// spread an event over several data lines (the reader joins them with
// '\n'), and a line break written back as is would end the client's data
// line early. In valid JSON a line break can only be whitespace between
// tokens, so compacting removes it; the scratch buffer is reused.
type oneLineJSON struct{ buf bytes.Buffer }

func (o *oneLineJSON) oneLine(data []byte) []byte {
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return data
	}
	o.buf.Reset()
	if json.Compact(&o.buf, data) != nil {
		return data
	}
	return o.buf.Bytes()
}
