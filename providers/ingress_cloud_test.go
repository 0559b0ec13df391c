package providers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

func TestCloudModelNames(t *testing.T) {
	for id, want := range map[string]string{
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":                                      "claude-sonnet-4-5-20250929",
		"anthropic.claude-3-5-haiku-20241022-v1:0":                                          "claude-3-5-haiku-20241022",
		"global.anthropic.claude-opus-4-1-20250805-v1:0":                                    "claude-opus-4-1-20250805",
		"arn:aws:bedrock:us-east-1:123:application-inference-profile/anthropic.claude-x-v2": "claude-x",
		"claude-sonnet-4-5@20250929":                                                        "claude-sonnet-4-5-20250929",
		"claude-opus-4@default":                                                             "claude-opus-4",
	} {
		got := CloudModelNames(id)
		if got[0] != id || !slices.Contains(got, want) {
			t.Errorf("%s: %v, want the id first and %s among them", id, got, want)
		}
	}
}

// TestBedrockStreamFramer: SSE arriving in arbitrary pieces comes out as
// whole event-stream messages the AWS decoder reads, an error event as an
// exception.
func TestBedrockStreamFramer(t *testing.T) {
	sse := "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	f := NewBedrockStreamFramer()
	var out bytes.Buffer
	for i := 0; i < len(sse); i += 7 {
		if err := f.Write(&out, []byte(sse[i:min(i+7, len(sse))])); err != nil {
			t.Fatal(err)
		}
	}
	dec := eventstream.NewDecoder()
	var got []string
	for out.Len() > 0 {
		m, err := dec.Decode(&out, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch m.Headers.Get(":message-type").String() {
		case "event":
			var p struct{ Bytes string }
			_ = json.Unmarshal(m.Payload, &p)
			raw, _ := base64.StdEncoding.DecodeString(p.Bytes)
			got = append(got, string(raw))
		case "exception":
			got = append(got, m.Headers.Get(":exception-type").String()+" "+string(m.Payload))
		}
	}
	want := []string{`{"type":"message_start"}`, `{"type":"ping"}`, `serviceUnavailableException {"message":"Overloaded"}`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
