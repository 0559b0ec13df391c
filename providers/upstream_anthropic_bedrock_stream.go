package providers

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// BedrockEventReader reads InvokeModelWithResponseStream's answer, a
// binary AWS event stream, and yields the Anthropic stream events inside
// it, so that the translators written for Anthropic's own SSE serve
// Bedrock unchanged. Each "chunk" event's payload is {"bytes": <base64 of
// one Anthropic event's JSON>}; the event's name is that JSON's "type".
// An exception Bedrock reports in-band (throttling, validation, a model
// error) becomes an Anthropic error event, which the translators turn into
// the client's error with the status the exception implies.
//
// Framing (lengths, CRCs, the 16 MiB payload bound) is the SDK's decoder's
// job; a frame it rejects ends the stream with an error, never a success.
type BedrockEventReader struct {
	r       countingReader
	dec     *eventstream.Decoder
	payload []byte // the frame's payload, reused
	data    []byte // the decoded event, reused
	name    []byte
	done    bool
}

// NewBedrockEventReader reads frames from r (buffered by the caller).
func NewBedrockEventReader(r io.Reader) *BedrockEventReader {
	return &BedrockEventReader{r: countingReader{r: r}, dec: eventstream.NewDecoder()}
}

// countingReader tells a stream that ended between frames from one cut
// inside a frame: the decoder reports a payload cut short as a plain EOF
// when the cut falls where its checksum should start.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ErrBadFrame is a stream Bedrock framed in a way the decoder refuses, or
// a chunk that does not carry an event.
var ErrBadFrame = errors.New("malformed AWS event stream frame")

// Next returns the next Anthropic event; slices are valid until the next
// call.
func (b *BedrockEventReader) Next() (Event, error) {
	for {
		if b.done {
			return Event{}, io.EOF
		}
		b.r.n = 0
		msg, err := b.dec.Decode(&b.r, b.payload[:0])
		if err != nil {
			if err == io.EOF && b.r.n == 0 {
				// A clean end between frames; a frame cut short is
				// io.ErrUnexpectedEOF, which is no EOF.
				b.done = true
				return Event{}, io.EOF
			}
			return Event{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
		}
		b.payload = msg.Payload
		switch header(msg.Headers, ":message-type") {
		case "event":
			if header(msg.Headers, ":event-type") != "chunk" {
				continue // events of other kinds carry no Anthropic event
			}
			return b.chunk(msg.Payload)
		case "exception":
			var body struct {
				Message  string `json:"message"`
				MessageC string `json:"Message"`
			}
			_ = json.Unmarshal(msg.Payload, &body)
			if body.Message == "" {
				body.Message = body.MessageC
			}
			return b.errorEvent(header(msg.Headers, ":exception-type"), body.Message), nil
		case "error":
			return b.errorEvent(header(msg.Headers, ":error-code"), header(msg.Headers, ":error-message")), nil
		default:
			return Event{}, fmt.Errorf("%w: message type %q", ErrBadFrame, header(msg.Headers, ":message-type"))
		}
	}
}

func (b *BedrockEventReader) chunk(payload []byte) (Event, error) {
	v, ok, err := jsonfast.FindMember(payload, 0, "bytes")
	if err != nil || !ok || payload[v.Start] != '"' {
		return Event{}, fmt.Errorf("%w: a chunk without bytes", ErrBadFrame)
	}
	enc := payload[v.Start+1 : v.End-1]
	b.data = b.data[:0]
	if b.data, err = base64.StdEncoding.AppendDecode(b.data, enc); err != nil {
		return Event{}, fmt.Errorf("%w: a chunk whose bytes are not base64", ErrBadFrame)
	}
	b.name = b.name[:0]
	if t, ok, err := jsonfast.FindMember(b.data, 0, "type"); err == nil && ok && b.data[t.Start] == '"' {
		b.name = append(b.name, b.data[t.Start+1:t.End-1]...)
	}
	return Event{Name: b.name, Data: b.data}, nil
}

func (b *BedrockEventReader) errorEvent(exception, message string) Event {
	b.data = bedrockErrorEvent(b.data[:0], exception, message)
	b.name = append(b.name[:0], "error"...)
	return Event{Name: b.name, Data: b.data}
}

func header(hs eventstream.Headers, name string) string {
	if v := hs.Get(name); v != nil {
		if s, ok := v.Get().(string); ok {
			return s
		}
	}
	return ""
}
