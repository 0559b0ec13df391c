package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPeekRequestJudgesDepthAsJSONValid: a body nested deeper than the
// fast scan tracks is valid JSON to encoding/json and to upstreams, so
// it must not be refused as malformed; a malformed one still is.
func TestPeekRequestJudgesDepthAsJSONValid(t *testing.T) {
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":{"x":` + deep + `}}`)
	if !json.Valid(body) {
		t.Fatal("test body is not valid JSON")
	}
	info, err := PeekRequest(body)
	if err != nil || info.Model != "m" {
		t.Fatalf("PeekRequest(deep) = %+v, %v; want model m", info, err)
	}
	if _, err := PeekRequest(body[:len(body)-1]); err == nil {
		t.Fatal("PeekRequest accepted a truncated body")
	}
}
