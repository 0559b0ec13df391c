package providers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/internal/fakes"
)

func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return m
}

func TestBedrockBody(t *testing.T) {
	in := []byte(`{"model":"claude","Model":"x","max_tokens":10,"stream":true,"metadata":{"user_id":"u"},` +
		`"anthropic_beta":["context-1m-2025-08-07","made-up-2020-01-01",7],"messages":[{"role":"user","content":"hi \"model\""}]}`)
	out, err := BedrockBody(in, BedrockBetas([]string{"claude-code-20250219, interleaved-thinking-2025-05-14", "oauth-2025-04-20,context-1m-2025-08-07"}))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeObject(t, out)
	for _, k := range []string{"model", "Model", "stream", "metadata"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s kept: %s", k, out)
		}
	}
	if m["anthropic_version"] != BedrockAnthropicVersion || m["max_tokens"] != float64(10) {
		t.Errorf("body = %s", out)
	}
	// The list was not all strings, so only the header's flags count.
	if got := m["anthropic_beta"]; !reflect.DeepEqual(got, []any{"interleaved-thinking-2025-05-14", "context-1m-2025-08-07"}) {
		t.Errorf("anthropic_beta = %v", got)
	}
	if !bytes.Contains(out, []byte(`"content":"hi \"model\""`)) {
		t.Errorf("message text altered: %s", out)
	}

	out, _ = BedrockBody([]byte(`{"model":"m","anthropic_beta":["output-128k-2025-02-19","nope"],"max_tokens":1}`), nil)
	if got := decodeObject(t, out)["anthropic_beta"]; !reflect.DeepEqual(got, []any{"output-128k-2025-02-19"}) {
		t.Errorf("body's own betas = %v", got)
	}
	out, _ = BedrockBody([]byte(`{"model":"m","max_tokens":1}`), nil)
	if _, ok := decodeObject(t, out)["anthropic_beta"]; ok {
		t.Errorf("empty anthropic_beta written: %s", out)
	}
	if _, err := BedrockBody([]byte(`[1]`), nil); err == nil {
		t.Error("a list was accepted as a body")
	}
}

func TestVertexBodies(t *testing.T) {
	out, err := VertexBody([]byte(`{"model":"a","anthropic_version":"2023-06-01","stream":true,"max_tokens":5,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeObject(t, out)
	if _, ok := m["model"]; ok || m["anthropic_version"] != VertexAnthropicVersion || m["stream"] != true {
		t.Errorf("rawPredict body = %s", out)
	}
	out, _ = VertexCountBody([]byte(`{"model":"alias","messages":[{"role":"user","content":"x"}]}`), "claude-sonnet-4-5@20250929")
	m = decodeObject(t, out)
	if m["model"] != "claude-sonnet-4-5@20250929" || m["anthropic_version"] != VertexAnthropicVersion {
		t.Errorf("count body = %s", out)
	}
}

func TestBedrockCountBody(t *testing.T) {
	out, err := BedrockCountBody([]byte(`{"model":"alias","messages":[{"role":"user","content":"x"}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Input struct {
			InvokeModel struct {
				Body string `json:"body"`
			} `json:"invokeModel"`
		} `json:"input"`
	}
	if err := json.Unmarshal(out, &env); err != nil {
		t.Fatal(err)
	}
	inner, err := base64.StdEncoding.DecodeString(env.Input.InvokeModel.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeObject(t, inner)
	if _, ok := m["model"]; ok || m["anthropic_version"] != BedrockAnthropicVersion || m["max_tokens"] != float64(1) {
		t.Errorf("invoke body = %s", inner)
	}
	if n, err := BedrockCountResult([]byte(`{"inputTokens":42}`)); n != 42 || err != nil {
		t.Errorf("count = %d, %v", n, err)
	}
	if _, err := BedrockCountResult([]byte(`{"input_tokens":42}`)); err == nil {
		t.Error("a foreign shape was read as a count")
	}
}

func TestCloudErrorMessage(t *testing.T) {
	tests := []struct {
		typ, body, want string
	}{
		{"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many requests, please wait before trying again."}`,
			"ThrottlingException: Too many requests, please wait before trying again."},
		{"", `{"__type":"com.amazon.coral.service#ExpiredTokenException","Message":"The security token included in the request is expired"}`,
			"ExpiredTokenException: The security token included in the request is expired"},
		{"", `[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]`, "RESOURCE_EXHAUSTED: Quota exceeded"},
		{"", `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`,
			"UNAUTHENTICATED: Request had invalid authentication credentials."},
		{"", `upstream connect error`, "upstream connect error"},
	}
	for _, tt := range tests {
		if got := CloudErrorMessage(tt.typ, []byte(tt.body)); got != tt.want {
			t.Errorf("CloudErrorMessage(%q, %s) = %q, want %q", tt.typ, tt.body, got, tt.want)
		}
	}
}

// encodeFrames frames Anthropic events as Bedrock does, with the SDK's
// own encoder.
func encodeFrames(t *testing.T, msgs ...eventstream.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, m := range msgs {
		if err := enc.Encode(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

var bedrockEvents = []string{
	`{"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`,
	`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":7}}`,
}

func TestBedrockEventReaderFeedsAnthropicTranslators(t *testing.T) {
	var frames []eventstream.Message
	for _, e := range bedrockEvents {
		frames = append(frames, fakes.BedrockChunkFrame(e))
	}
	raw := encodeFrames(t, frames...)

	// Anthropic client: the events come out as Anthropic's own SSE.
	r := NewBedrockEventReader(bytes.NewReader(raw))
	tr := NewAnthropicPassthroughStream()
	var out []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if out, err = tr.Translate(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	evs := parseSSE(t, string(out))
	if len(evs) != len(bedrockEvents) || evs[0].name != "message_start" || evs[5].name != "message_stop" || evs[2].data != bedrockEvents[2] {
		t.Fatalf("events = %+v", evs)
	}
	if u := tr.Usage(); u.InputTokens != 12 || u.CacheReadTokens != 3 || u.OutputTokens != 7 || !tr.Complete() {
		t.Errorf("usage = %+v complete %v", u, tr.Complete())
	}

	// OpenAI client: the same frames through the chat translator.
	r = NewBedrockEventReader(bytes.NewReader(raw))
	ot := NewAnthropicToOpenAIStream(true)
	out = out[:0]
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if out, err = ot.Translate(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	out = ot.Finish(out)
	if !strings.Contains(string(out), `"content":"Hello"`) || !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
		t.Errorf("chat stream = %s", out)
	}
}

func TestBedrockEventReaderExceptions(t *testing.T) {
	raw := encodeFrames(t, fakes.BedrockChunkFrame(bedrockEvents[0]), fakes.BedrockExceptionFrame("throttlingException", "Too many tokens, please wait before trying again."))
	r := NewBedrockEventReader(bytes.NewReader(raw))
	tr := NewAnthropicPassthroughStream()
	ev, _ := r.Next()
	if _, err := tr.Translate(nil, ev); err != nil {
		t.Fatal(err)
	}
	ev, err := r.Next()
	if err != nil || string(ev.Name) != "error" {
		t.Fatalf("event = %q %v", ev.Name, err)
	}
	_, err = tr.Translate(nil, ev)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 429 || !strings.Contains(apiErr.Message, "throttlingException: Too many tokens") {
		t.Fatalf("in-band error = %v", err)
	}

	raw = encodeFrames(t, fakes.BedrockExceptionFrame("validationException", "messages: field required"))
	ev, _ = NewBedrockEventReader(bytes.NewReader(raw)).Next()
	if _, err := NewAnthropicToOpenAIStream(false).Translate(nil, ev); !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Errorf("validation = %v", err)
	}
}

func TestBedrockEventReaderBrokenFrames(t *testing.T) {
	raw := encodeFrames(t, fakes.BedrockChunkFrame(bedrockEvents[0]), fakes.BedrockChunkFrame(bedrockEvents[1]))
	for _, cut := range []int{len(raw) - 1, len(raw) - 4, len(raw) - 20} {
		r := NewBedrockEventReader(bytes.NewReader(raw[:cut]))
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err == nil || err == io.EOF {
			t.Errorf("cut at %d: err = %v, want a broken frame", cut, err)
		}
	}
	flipped := bytes.Clone(raw)
	flipped[20] ^= 0xff // inside the first frame's headers: its CRC fails
	if _, err := NewBedrockEventReader(bytes.NewReader(flipped)).Next(); !errors.Is(err, ErrBadFrame) {
		t.Errorf("corrupt frame: %v", err)
	}
	var hs eventstream.Headers
	hs.Set(":message-type", eventstream.StringValue("event"))
	hs.Set(":event-type", eventstream.StringValue("chunk"))
	notB64 := encodeFrames(t, eventstream.Message{Headers: hs, Payload: []byte(`{"bytes":"@@@"}`)})
	if _, err := NewBedrockEventReader(bytes.NewReader(notB64)).Next(); !errors.Is(err, ErrBadFrame) {
		t.Errorf("bad base64: %v", err)
	}
}
