package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

// A chained Responses turn's history is written into its body once per
// turn: the loop breaker and a native upstream's request both ask for it
// with the same body and get the same bytes, not a second decode and
// encode of the whole history; another body (one the gateway bounded) is
// built again.
func TestInlineHistoryBuiltOncePerBody(t *testing.T) {
	body := []byte(`{"model":"m","previous_response_id":"resp_1","input":"next"}`)
	turn, err := ParseResponsesRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	turn.Prepend([]json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":"first"}`)})
	first, expanded, err := turn.InlineHistory(body)
	if err != nil || !expanded || !strings.Contains(string(first), `"first"`) || strings.Contains(string(first), "previous_response_id") {
		t.Fatalf("inline %s (%v, %v)", first, expanded, err)
	}
	again, _, _ := turn.InlineHistory(body)
	if &again[0] != &first[0] {
		t.Error("the same body's history was built again")
	}
	other := []byte(`{"model":"m","previous_response_id":"resp_1","input":"next","max_output_tokens":10}`)
	bounded, _, err := turn.InlineHistory(other)
	if err != nil || &bounded[0] == &first[0] || !strings.Contains(string(bounded), `"max_output_tokens":10`) {
		t.Errorf("another body answered %s (%v)", bounded, err)
	}
}
