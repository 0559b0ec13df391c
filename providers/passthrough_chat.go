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
	scratch        OpenAIUsage
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
		usageOnly := false
		var u, tier jsonfast.Span
		var hasUsage bool
		_, err := jsonfast.EachMember(data, 0, func(k []byte, v jsonfast.Span) {
			switch {
			case jsonfast.KeyIs(k, "usage"):
				u, hasUsage = v, true
			case jsonfast.KeyIs(k, "service_tier"):
				tier = v
			case jsonfast.KeyIs(k, "choices"):
				usageOnly = isEmptyArray(data[v.Start:v.End])
			}
		})
		if err == nil && hasUsage && data[u.Start] == '{' {
			if readOpenAIUsage(data[u.Start:u.End], &t.scratch) {
				t.usage = usageFromOpenAI(&t.scratch)
				if tier.End > tier.Start {
					t.usage.ServiceTier, _ = jsonfast.DecodeStringToken(data[tier.Start:tier.End])
				}
			}
			if usageOnly && t.dropUsageChunk {
				return dst, nil
			}
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
	// One walk of the answer finds both members FindMember would, the
	// last of each name.
	var v, tier jsonfast.Span
	ok, hasTier := false, false
	_, err := jsonfast.EachMember(body, 0, func(k []byte, s jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "usage"):
			v, ok = s, true
		case jsonfast.KeyIs(k, "service_tier"):
			tier, hasTier = s, true
		}
	})
	if err != nil || !ok || body[v.Start] != '{' {
		return Usage{}
	}
	var u OpenAIUsage
	if !readOpenAIUsage(body[v.Start:v.End], &u) {
		return Usage{}
	}
	out := usageFromOpenAI(&u)
	if hasTier {
		out.ServiceTier, _ = jsonfast.DecodeStringToken(body[tier.Start:tier.End])
	}
	return out
}

// readOpenAIUsage reads an OpenAI usage object into u with the hub's
// usage reader, as for translated answers; json.Unmarshal judges
// whatever that would not read identically (and, checking the whole
// value first, anything invalid). false: raw is no usage object.
func readOpenAIUsage(raw []byte, u *OpenAIUsage) bool {
	if jsonfast.Valid(raw) {
		r := jsonfast.NewReader(raw)
		var cu *chatUsage
		readChatUsage(&r, 0, &cu)
		if r.OK() && cu != nil {
			*u = cu.openAI()
			return true
		}
	}
	*u = OpenAIUsage{}
	return json.Unmarshal(raw, u) == nil
}
