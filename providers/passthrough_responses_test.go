package providers

import (
	"bytes"
	"strings"
	"testing"
)

// openAIResponsesStream is a native Responses stream as OpenAI sends it,
// shortened.
var openAIResponsesStream = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","status":"in_progress","output":[],"usage":null}}`,
	`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_up","object":"response","status":"in_progress","output":[],"usage":null}}`,
	`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
	`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello","logprobs":[]}`,
	`{"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"Hello"}]}}`,
	`{"type":"response.completed","sequence_number":5,"response":{"id":"resp_up","object":"response","status":"completed","service_tier":"flex","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"Hello"}]}],"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":35}}}`,
}

func TestResponsesPassthroughRelaysAndReads(t *testing.T) {
	turn := mustTurn(t, `{"model":"m","input":"hi","stream":true}`)
	p := &responsesPassthrough{t: turn}
	var out []byte
	var err error
	for i, data := range openAIResponsesStream {
		ev := Event{Data: []byte(data)}
		if i%2 == 0 {
			// Some servers leave the event line out; the gateway names it.
			ev.Name = []byte(strings.SplitN(data[9:], `"`, 2)[0])
		}
		if out, err = p.Translate(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	if !p.Complete() {
		t.Fatal("a stream ending in response.completed is complete")
	}
	evs := parseRespSSE(t, out)
	if len(evs) != len(openAIResponsesStream) {
		t.Fatalf("%d events relayed", len(evs))
	}
	for _, ev := range evs {
		if ev.name != ev.data["type"] {
			t.Errorf("event %q carries type %v", ev.name, ev.data["type"])
		}
	}
	if u := p.Usage(); u.InputTokens != 20 || u.CacheReadTokens != 10 || u.OutputTokens != 5 || u.ServiceTier != "flex" {
		t.Errorf("usage %+v", u)
	}
	if turn.ID != "resp_up" || turn.Status != "completed" || len(turn.Output) != 1 {
		t.Errorf("turn not adopted: %s %s %d", turn.ID, turn.Status, len(turn.Output))
	}
}

func TestResponsesPassthroughErrorsAndEndings(t *testing.T) {
	turn := mustTurn(t, `{"model":"m","input":"hi","stream":true}`)
	p := &responsesPassthrough{t: turn}
	out, _ := p.Translate(nil, Event{Data: []byte(openAIResponsesStream[0])})
	// The nested error shape OpenAI sends live: never relayed as is.
	_, err := p.Translate(out, Event{Name: []byte("error"), Data: []byte(`{"type":"error","sequence_number":1,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your quota.","param":null}}`)})
	e, ok := err.(*APIError)
	if !ok || e.Code != "insufficient_quota" || e.Message != "You exceeded your quota." {
		t.Fatalf("in-band error %#v", err)
	}
	out = p.Fail(out, e)
	evs := parseRespSSE(t, out)
	if n := len(evs); n != 3 || evs[1].name != "error" || evs[2].name != "response.failed" {
		t.Fatalf("events %v", evs)
	}
	if seq := evs[2].data["sequence_number"].(float64); seq != 2 {
		t.Errorf("response.failed numbered %v, want 2 (after the upstream's 0)", seq)
	}
	if _, err := p.Translate(nil, Event{Data: []byte(`{"type":"response.output_text.delta"`)}); err == nil {
		t.Error("a broken event was relayed")
	}
	if p2 := (&responsesPassthrough{t: turn}); p2.Complete() {
		t.Error("an empty stream is complete")
	}
	// [DONE] is not part of the protocol: dropped.
	if out, _ := (&responsesPassthrough{t: turn}).Translate(nil, Event{Data: []byte("[DONE]")}); len(out) != 0 || bytes.Contains(out, []byte("DONE")) {
		t.Errorf("[DONE] relayed: %q", out)
	}
}
