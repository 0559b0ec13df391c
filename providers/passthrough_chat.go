package providers

import (
	"bytes"
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// chatPassthroughStream forwards OpenAI chunks unchanged while reading
// the usage chunk.
type chatPassthroughStream struct {
	dropUsageChunk bool
	sawDone        bool // [DONE] sent to the client, by the upstream or Finish
	upstreamDone   bool // the upstream sent [DONE] or a finish reason
	usage          Usage
	line           oneLineJSON
}

// NewOpenAIPassthroughStream forwards an OpenAI upstream stream to an
// OpenAI client. dropUsageChunk hides the usage-only chunk from a client
// that did not ask for it (the gateway added include_usage for the ledger).
func NewOpenAIPassthroughStream(dropUsageChunk bool) StreamTranslator {
	return &chatPassthroughStream{dropUsageChunk: dropUsageChunk}
}

func (t *chatPassthroughStream) Usage() Usage { return t.usage }

func (t *chatPassthroughStream) Translate(dst []byte, ev Event) ([]byte, error) {
	data := ev.Data
	if string(bytes.TrimSpace(data)) == dataDone {
		t.sawDone, t.upstreamDone = true, true
		return AppendSSE(dst, ev.Name, data), nil
	}
	// Every chunk is checked: a relayed `data: {not json` would reach the
	// client as a success that its SDK then fails to parse.
	if !jsonfast.Valid(data) {
		return dst, errBadEvent
	}
	data = t.line.oneLine(data)
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`{"error"`)) {
		return dst, inBandError(data)
	}
	// A non-null finish_reason is a string; servers that never send
	// [DONE] still end with one.
	if bytes.Contains(data, []byte(`"finish_reason":"`)) {
		t.upstreamDone = true
	}
	// Only chunks that mention usage are scanned; most text chunks carry
	// `"usage":null` and are skipped after the scan.
	if bytes.Contains(data, []byte(`"usage"`)) {
		u, object, noChoices := openAIUsageOf(data)
		if u.Seen {
			t.usage = u
		}
		if object && noChoices && t.dropUsageChunk {
			return dst, nil
		}
	}
	return AppendSSE(dst, ev.Name, data), nil
}

func (t *chatPassthroughStream) Complete() bool { return t.upstreamDone }

func (t *chatPassthroughStream) Finish(dst []byte) []byte {
	if t.sawDone {
		return dst
	}
	t.sawDone = true
	return append(dst, sseDone...)
}

func isEmptyArray(v []byte) bool {
	if len(v) < 2 || v[0] != '[' {
		return false
	}
	return jsonfast.SkipSpace(v, 1) == len(v)-1
}

// OpenAIUsageFromBody reads the usage of a non-streaming OpenAI response
// without decoding the rest of it. A body without usage yields a zero
// Usage with Seen false.
func OpenAIUsageFromBody(body []byte) Usage {
	u, _, _ := openAIUsageOf(body)
	return u
}

// openAIUsageOf reads the usage of an OpenAI answer or stream chunk in
// one walk of its members (the last of each name, as FindMember would
// find them), with the hub's usage reader, as for translated answers;
// json.Unmarshal judges whatever that would not read identically (and,
// checking the whole value first, anything invalid). u.Seen is false
// when there is no usage it could read; object says usage is an object;
// noChoices that choices is an empty array (a usage-only chunk).
func openAIUsageOf(body []byte) (u Usage, object, noChoices bool) {
	var v, tier jsonfast.Span
	hasUsage, hasTier := false, false
	_, err := jsonfast.EachMember(body, 0, func(k []byte, s jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "usage"):
			v, hasUsage = s, true
		case jsonfast.KeyIs(k, "service_tier"):
			tier, hasTier = s, true
		case jsonfast.KeyIs(k, "choices"):
			noChoices = isEmptyArray(body[s.Start:s.End])
		}
	})
	if err != nil || !hasUsage || body[v.Start] != '{' {
		return Usage{}, false, noChoices
	}
	raw := body[v.Start:v.End]
	var ou OpenAIUsage
	var cu *chatUsage
	fast := jsonfast.Valid(raw)
	if fast {
		r := jsonfast.NewReader(raw)
		readChatUsage(&r, 0, &cu)
		fast = r.OK() && cu != nil
	}
	if fast {
		ou = cu.openAI()
	} else {
		// Apart, so that only this path puts a usage on the heap.
		slow := new(OpenAIUsage)
		if json.Unmarshal(raw, slow) != nil {
			return Usage{}, true, noChoices
		}
		ou = *slow
	}
	u = usageFromOpenAI(&ou)
	if hasTier {
		u.ServiceTier, _ = jsonfast.DecodeStringToken(body[tier.Start:tier.End])
	}
	return u, true, noChoices
}
