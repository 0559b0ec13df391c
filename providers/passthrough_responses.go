package providers

import (
	"bytes"
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// Native Responses: an upstream that serves /responses itself (OpenAI's
// API, or a server marked responses_api: native) gets the request as the
// client sent it, model swapped, and its events are relayed one by one.
// The gateway still owns the conversation state: history it resolved
// (previous_response_id, item_reference) is sent inline, so a chain
// survives a fallback to another backend, and the answer is read for the
// response id, output and usage it stores and records.

// nativeResponsesRequest is the body for a native upstream.
func nativeResponsesRequest(body []byte, t *ResponsesTurn, model string) ([]byte, error) {
	inline, _, err := t.InlineHistory(body)
	if err != nil {
		return nil, err
	}
	return RewriteModel(inline, model)
}

// InlineHistory is body with the history the gateway resolved
// (previous_response_id, conversation, item_reference) written into its
// input, as the upstream is sent it: steps that judge the whole
// conversation (the loop breaker) read it. expanded is false, and body
// returned as is, when the gateway added nothing. It is built once per
// body: asked again for the same body (the same slice, which a request
// holds unchanged while it is served), it answers the same bytes.
func (t *ResponsesTurn) InlineHistory(body []byte) (inline []byte, expanded bool, err error) {
	if !t.expanded {
		return body, false, nil
	}
	if t.inline != nil && sameSlice(body, t.inlineOf) {
		return t.inline, true, nil
	}
	defer func() {
		if err == nil {
			t.inline, t.inlineOf = inline, body
		}
	}()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, false, BadRequest("", "request body must be a JSON object")
	}
	if m["input"], err = json.Marshal(t.Items); err != nil {
		return nil, false, err
	}
	delete(m, "previous_response_id")
	delete(m, "conversation")
	delete(m, "background")
	inline, err = json.Marshal(m)
	return inline, err == nil, err
}

// sameSlice reports whether a and b are one slice: the same bytes at the
// same place, not merely equal ones.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// nativeResponse is what the gateway reads of a Response.
type nativeResponse struct {
	ID          string            `json:"id"`
	Status      string            `json:"status"`
	Output      []json.RawMessage `json:"output"`
	ServiceTier string            `json:"service_tier"`
	Usage       *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

// usage is the Response's usage: its input_tokens count the cached
// ones, which the ledger counts apart.
func (r *nativeResponse) usage() Usage {
	var u Usage
	if r.Usage != nil {
		u.Seen = true
		u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
		if d := r.Usage.InputTokensDetails; d != nil && d.CachedTokens <= u.InputTokens {
			u.CacheReadTokens = d.CachedTokens
			u.InputTokens -= d.CachedTokens
		}
	}
	u.ServiceTier = r.ServiceTier
	return u
}

// ResponsesUsageFromBody reads the usage of a non-streaming Response as
// the Responses route reads it. A body without usage yields a zero Usage
// with Seen false.
func ResponsesUsageFromBody(body []byte) Usage {
	var r nativeResponse
	if json.Unmarshal(body, &r) != nil {
		return Usage{}
	}
	return r.usage()
}

// adopt takes the upstream's Response as the turn's: its id is the one
// the client sees, so it is the one stored.
func (t *ResponsesTurn) adopt(raw []byte) (Usage, error) {
	var r nativeResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return Usage{}, err
	}
	u := r.usage()
	if t.Background() || t.ConversationID != "" {
		raw = t.echo(raw)
	}
	if !t.Background() && r.ID != "" {
		t.ID = r.ID
	}
	t.finalize(r.Status, r.Output, raw)
	return u, nil
}

func nativeResponsesRoute() Route {
	r := Route{Client: FormatResponses, Upstream: FormatResponses}
	r.request = func(body []byte, info RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
		out, err := nativeResponsesRequest(body, info.responses(), model)
		return out, false, err
	}
	r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
		if !looksLikeObject(raw) {
			return nil, Usage{}, ErrNotJSONObject
		}
		t := info.responses()
		u, err := t.adopt(raw)
		if t.Background() || t.ConversationID != "" {
			raw = t.echo(raw)
		}
		return raw, u, err
	}
	r.stream = func(_ string, info RequestInfo, _ bool) StreamTranslator {
		return &responsesPassthrough{t: info.responses()}
	}
	return r
}

// responsesPassthrough relays a native Responses stream event by event,
// checking each is JSON, and reads the terminal event.
type responsesPassthrough struct {
	t     *ResponsesTurn
	line  oneLineJSON
	seq   int64
	usage Usage
	done  bool
	probe struct {
		Type           string          `json:"type"`
		SequenceNumber *int64          `json:"sequence_number"`
		Response       json.RawMessage `json:"response"`
	}
}

func (p *responsesPassthrough) Translate(dst []byte, ev Event) ([]byte, error) {
	data := bytes.TrimSpace(ev.Data)
	if string(data) == dataDone {
		// Not part of the Responses protocol, but harmless to drop.
		return dst, nil
	}
	if !jsonfast.Valid(data) {
		return dst, errBadEvent
	}
	data = p.line.oneLine(data)
	typ, ok, err := jsonfast.FindMember(data, 0, "type")
	name := ev.Name
	if err == nil && ok && typ.End > typ.Start {
		// Only the event's type is needed on most events; the terminal
		// ones and errors are decoded.
		t := data[typ.Start:typ.End]
		switch {
		case bytes.Equal(t, []byte(`"error"`)):
			return dst, inBandResponsesError(data)
		case bytes.HasPrefix(t, []byte(`"response.completed"`)), bytes.HasPrefix(t, []byte(`"response.incomplete"`)),
			bytes.HasPrefix(t, []byte(`"response.failed"`)):
			p.probe.Response = nil
			if json.Unmarshal(data, &p.probe) == nil && len(p.probe.Response) > 0 {
				p.usage, _ = p.t.adopt(p.probe.Response)
			}
			p.done = true
		}
		if len(name) == 0 {
			if s, ok := jsonfast.DecodeStringToken(t); ok {
				name = []byte(s)
			}
		}
	}
	if seq, ok, err := jsonfast.FindMember(data, 0, "sequence_number"); err == nil && ok && seq.End > seq.Start {
		var n int64
		if json.Unmarshal(data[seq.Start:seq.End], &n) == nil {
			p.seq = n + 1
		}
	}
	if p.t.Background() || p.t.ConversationID != "" {
		data = p.t.echoEvent(data)
	}
	return AppendSSE(dst, name, data), nil
}

// inBandResponsesError reads an `error` event in either shape (flat, or
// nested under "error").
func inBandResponsesError(data []byte) *APIError {
	var ev struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   *struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	e := &APIError{Status: 502, Code: ev.Code, Message: ev.Message}
	if ev.Error != nil {
		if e.Message == "" {
			e.Message = ev.Error.Message
		}
		if e.Code == "" {
			e.Code = ev.Error.Code
		}
		if ev.Error.Type != "" {
			e.Status = statusForErrorType(ev.Error.Type)
		}
	}
	if e.Code == "rate_limit_exceeded" {
		e.Status = 429
	}
	if e.Message == "" {
		e.Message = "the upstream reported an error in its stream"
	}
	return e
}

func (p *responsesPassthrough) Finish(dst []byte) []byte { return dst }
func (p *responsesPassthrough) Usage() Usage             { return p.usage }
func (p *responsesPassthrough) Complete() bool           { return p.done }

// Fail ends the relayed stream in the protocol's terms, numbering on from
// the upstream's last event.
func (p *responsesPassthrough) Fail(dst []byte, e *APIError) []byte {
	s := &responsesStream{t: p.t, seq: int(p.seq), started: true}
	return s.Fail(dst, e)
}

// echo is a native upstream's Response with what the gateway kept from
// the request: a background response's id (the client was answered with
// it at once) and background: true, and the conversation, which the
// upstream never saw.
func (t *ResponsesTurn) echo(raw []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if t.Background() {
		m["id"], _ = json.Marshal(t.ID)
		m["background"] = json.RawMessage("true")
	}
	if t.ConversationID != "" {
		m["conversation"], _ = json.Marshal(responseConv{ID: t.ConversationID})
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// echoEvent is a relayed event whose response object gets echo.
func (t *ResponsesTurn) echoEvent(data []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || len(m["response"]) == 0 {
		return data
	}
	m["response"] = t.echo(m["response"])
	b, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return b
}
