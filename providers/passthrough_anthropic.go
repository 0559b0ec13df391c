package providers

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// anthropicPassthroughStream forwards Anthropic events unchanged while
// applying the ledger rule of docs/wire-formats.md §2.3 to their usage.
type anthropicPassthroughStream struct {
	usage    Usage
	scratch  AnthropicUsage
	complete bool
	line     oneLineJSON
}

// NewAnthropicPassthroughStream forwards an Anthropic upstream stream to an
// Anthropic client, event names included.
func NewAnthropicPassthroughStream() StreamTranslator {
	return &anthropicPassthroughStream{}
}

func (t *anthropicPassthroughStream) Usage() Usage { return t.usage }

func (t *anthropicPassthroughStream) Translate(dst []byte, ev Event) ([]byte, error) {
	// Every event is checked: a relayed `data: {not json` would reach the
	// client as a success that its SDK then fails to parse.
	if !jsonfast.Valid(ev.Data) {
		return dst, errBadEvent
	}
	ev.Data = t.line.oneLine(ev.Data)
	name := ev.Name
	if len(name) == 0 {
		// The event line is mandatory, but a proxy in between may have
		// dropped it; the data's "type" says the same.
		if v, ok, err := jsonfast.FindMember(ev.Data, 0, "type"); err == nil && ok && v.End-v.Start > 2 {
			name = ev.Data[v.Start+1 : v.End-1]
		}
	}
	switch string(name) {
	case "message_start":
		if m, ok, err := jsonfast.FindMember(ev.Data, 0, "message"); err == nil && ok && ev.Data[m.Start] == '{' {
			if u, ok := t.readUsage(ev.Data, m.Start); ok {
				t.usage = usageFromAnthropic(u)
			}
		}
	case "message_delta":
		if u, ok := t.readUsage(ev.Data, 0); ok {
			mergeDeltaUsage(&t.usage, u)
		}
	case "message_stop":
		t.complete = true
	case "error":
		return dst, inBandError(ev.Data)
	}
	return AppendSSE(dst, ev.Name, ev.Data), nil
}

// readUsage decodes the "usage" member of the object at data[at] into the
// reused scratch value.
func (t *anthropicPassthroughStream) readUsage(data []byte, at int) (*AnthropicUsage, bool) {
	v, ok, err := jsonfast.FindMember(data, at, "usage")
	if err != nil || !ok || data[v.Start] != '{' {
		return nil, false
	}
	t.scratch = AnthropicUsage{}
	if json.Unmarshal(data[v.Start:v.End], &t.scratch) != nil {
		return nil, false
	}
	return &t.scratch, true
}

func (t *anthropicPassthroughStream) Complete() bool { return t.complete }

// Finish adds nothing: the upstream's own events are the client's stream.
func (t *anthropicPassthroughStream) Finish(dst []byte) []byte { return dst }

// AnthropicUsageFromBody reads the usage of a non-streaming Anthropic
// response without decoding the rest of it. A body without usage yields a
// zero Usage with Seen false.
func AnthropicUsageFromBody(body []byte) Usage {
	v, ok, err := jsonfast.FindMember(body, 0, "usage")
	if err != nil || !ok || body[v.Start] != '{' {
		return Usage{}
	}
	var u AnthropicUsage
	if json.Unmarshal(body[v.Start:v.End], &u) != nil {
		return Usage{}
	}
	return usageFromAnthropic(&u)
}
